#if canImport(Glibc)
import Glibc
#endif
import MentorAPI

// Until the daemon API lands (issue 3) the client answers only --help and --version.
let usage = """
    mentormate \(MentorMateVersion.string) — find tutors and students on your campus network

    USAGE: mentormate [--socket PATH] [--json] COMMAND [OPTIONS]

    Commands (served by the mentormated daemon; coming with the local API):
      signup, login, logout, whoami, profile show|set, feed, like, pass, undo,
      matches, unmatch, chat, peers, status, doctor

    Options:
      --help       Show this help.
      --version    Print the version.
    """

let args = Array(CommandLine.arguments.dropFirst())
if args.isEmpty || args.contains("--help") || args.contains("-h") {
    print(usage)
    exit(args.isEmpty ? 2 : 0)
} else if args == ["--version"] {
    print("mentormate \(MentorMateVersion.string)")
} else {
    StandardStream.error("mentormate: '\(args.joined(separator: " "))' is not available yet in this build; see `mentormate --help`")
    exit(2)
}
