#if canImport(Glibc)
import Glibc
#endif
import MentorAPI
import MentorCLI

// `mentormate`: the commands, their parsing and their output are in MentorAPI/CommandLine
// (tested there with a fake daemon); this target supplies the real terminal, files and socket.
let status = MentormateCLI.main(Array(CommandLine.arguments.dropFirst()), host: SystemHost())
exit(status.rawValue)
