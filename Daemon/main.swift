#if canImport(Glibc)
import Glibc
#endif
import MentorAPI

// Until the daemon issue (3) lands, mentormated answers only --help and --version.
let usage = """
    mentormated \(MentorMateVersion.string) — the MentorMate peer-to-peer sync daemon

    USAGE: mentormated [OPTIONS]

    Options (the daemon itself arrives with the local API):
      --help       Show this help.
      --version    Print the version and the record format version.
    """

let args = Array(CommandLine.arguments.dropFirst())
if args.contains("--help") || args.contains("-h") {
    print(usage)
} else if args == ["--version"] {
    print("mentormated \(MentorMateVersion.string) (record format \(MentorMateVersion.recordFormat))")
} else {
    StandardStream.error("mentormated: this build only answers --help and --version; the daemon arrives with the local API (see README)")
    exit(2)
}
