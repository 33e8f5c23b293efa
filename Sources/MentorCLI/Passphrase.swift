import MentorAPI
import MentorArguments
/// Asking for a passphrase: twice at a terminal (the host turns echo off), once from a pipe.
public enum PassphrasePrompt {
    public static func ask(_ host: any ClientHost, confirm: Bool) throws(ClientError) -> String {
        guard host.secretsFromTerminal else {
            guard let line = try host.readSecret(prompt: ""), !line.isEmpty else {
                throw ClientError("no passphrase on stdin",
                                  hint: "type it at a terminal, or pipe one line: printf '%s\\n' \"$PASSPHRASE\" | mentormate ...")
            }
            return line
        }
        guard let first = try host.readSecret(prompt: "Passphrase: ") else {
            throw ClientError("no passphrase given (end of input)", hint: "run the command again and type the passphrase")
        }
        guard !first.isEmpty else {
            throw ClientError("the passphrase is empty", hint: "run the command again and type a passphrase")
        }
        if confirm {
            guard let second = try host.readSecret(prompt: "Passphrase again: ") else {
                throw ClientError("no passphrase given (end of input)", hint: "run the command again and type the passphrase twice")
            }
            guard first == second else {
                throw ClientError("the two passphrases differ; nothing was changed",
                                  hint: "run the command again and type the same passphrase twice")
            }
        }
        return first
    }
}
