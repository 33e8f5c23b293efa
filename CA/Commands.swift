import MentorArguments

/// `mentormate-ca`'s subcommands (mentormate-ca(8)). Each is parsed from the tokens after its
/// name; `--help` works for each; a usage mistake exits 64.
enum CAProgram {
    static let name = "mentormate-ca"

    static let subcommands: [(name: String, abstract: String)] = [
        ("init", InitCommand.configuration.abstract),
        ("key", KeyCommand.configuration.abstract),
        ("serve", ServeCommand.configuration.abstract),
        ("issue", IssueCommand.configuration.abstract),
        ("release", ReleaseCommand.configuration.abstract),
        ("list", ListCommand.configuration.abstract),
    ]

    static var helpText: String {
        """
        mentormate-ca: the campus certifying authority for MentorMate membership certificates

        It mails a one-time code to a campus address and trades the code for a certificate that
        names the account and the mail domain (never the address), signed by the CA's key.
        Nodes trust the key given in their `campus_ca_key`.

        USAGE: mentormate-ca SUBCOMMAND [OPTIONS]

        SUBCOMMANDS:
        \(HelpFormatter.rows(subcommands.map { ($0.name, $0.abstract) }))
        OPTIONS:
          --version   print the version
          -h, --help  show this help

        `mentormate-ca SUBCOMMAND --help` shows a subcommand's options. Exit status: 0 done,
        1 failed (the message says why), 64 a usage mistake.
        """
    }
}

private let dirHelp = "the CA's directory (made by `init`; mode 0700)"

struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        program: CAProgram.name, path: ["init"],
        abstract: "make a new CA: its directory, key, code secret and ca.conf",
        discussion: """
            Creates DIR (0700) with ca.key (the signing key, 0600), code.secret (0600) and ca.conf.
            Refuses a DIR that already holds a key. Back up DIR: without ca.key every certificate
            must be issued again under a new key.
            """)
    var dir: String?
    var domain: String?
    var smtp: String?
    var from: String?
    var listen: String?
    var validityDays: Int64?
    var help = false

    static var options: [CommandOption<InitCommand>] { [
        .string("--dir", value: "DIR", \.dir, required: true, help: dirHelp),
        .string("--domain", value: "DOMAIN", \.domain, required: true, help: "the mail domain certified, e.g. campus.edu"),
        .string("--smtp", value: "HOST:PORT", \.smtp, help: "the mail relay (default 127.0.0.1:25)"),
        .string("--from", value: "ADDRESS", \.from, help: "the sender of the code mail (default mentormate-ca@DOMAIN)"),
        .string("--listen", value: "HOST:PORT", \.listen, help: "where clients reach the CA (default [::]:4712)"),
        .integer("--validity-days", \.validityDays, range: 1...3650, help: "how long a certificate counts (default 365)"),
        .flag("--help", short: "-h", \.help, help: "show this help"),
    ] }
}

struct KeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        program: CAProgram.name, path: ["key"],
        abstract: "print the CA key (mmca1…) for every node's campus_ca_key")
    var dir: String?
    var help = false
    static var options: [CommandOption<KeyCommand>] { [
        .string("--dir", value: "DIR", \.dir, required: true, help: dirHelp),
        .flag("--help", short: "-h", \.help, help: "show this help"),
    ] }
}

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        program: CAProgram.name, path: ["serve"],
        abstract: "run the CA until SIGTERM or SIGINT",
        discussion: "Logs one line per request on stderr: never a code, never a whole address.")
    var dir: String?
    var listen: String?
    var help = false
    static var options: [CommandOption<ServeCommand>] { [
        .string("--dir", value: "DIR", \.dir, required: true, help: dirHelp),
        .string("--listen", value: "HOST:PORT", \.listen, help: "listen here instead of ca.conf's `listen` (port 0 picks one)"),
        .flag("--help", short: "-h", \.help, help: "show this help"),
    ] }
}

struct IssueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        program: CAProgram.name, path: ["issue"],
        abstract: "sign a certificate by hand (no mail, nothing recorded) and print it in hex",
        discussion: "For exceptions the operator decides on. The address is not asked, so one-account-per-address does not apply.")
    var dir: String?
    var account: String?
    var domain: String?
    var help = false
    static var options: [CommandOption<IssueCommand>] { [
        .string("--dir", value: "DIR", \.dir, required: true, help: dirHelp),
        .string("--account", value: "ID", \.account, required: true, help: "the account ID (mm1…, as `mentormate whoami` prints it)"),
        .string("--domain", value: "DOMAIN", \.domain, required: true, help: "the mail domain the certificate names"),
        .flag("--help", short: "-h", \.help, help: "show this help"),
    ] }
}

struct ReleaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        program: CAProgram.name, path: ["release"],
        abstract: "forget the account certified for ADDRESS, so it can certify another",
        discussion: "The certificate already issued still counts on nodes until it expires. Stop `serve` first.")
    var dir: String?
    var address = ""
    var help = false
    static var options: [CommandOption<ReleaseCommand>] { [
        .string("--dir", value: "DIR", \.dir, required: true, help: dirHelp),
        .flag("--help", short: "-h", \.help, help: "show this help"),
    ] }
    static var arguments: [CommandArgument<ReleaseCommand>] { [
        .required("ADDRESS", \.address, help: "the mail address, e.g. ana@campus.edu"),
    ] }
}

struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        program: CAProgram.name, path: ["list"],
        abstract: "count pending codes and certified addresses (never shows an address)")
    var dir: String?
    var help = false
    static var options: [CommandOption<ListCommand>] { [
        .string("--dir", value: "DIR", \.dir, required: true, help: dirHelp),
        .flag("--help", short: "-h", \.help, help: "show this help"),
    ] }
}
