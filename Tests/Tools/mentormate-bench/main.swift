import Foundation
import MentorAPI
import MentorArguments

// mentormate-bench: `mentormate-bench merge [--records N] [--authors M] [--batch B] [--seed S] [--breakdown]
// [--devices D [--rounds R]]`, and the other commands in `Usage.text`.
// Exit status: 0 measured (targets may still say MISS), 1 the run failed or its result was
// wrong (records missing, refused, integrity check failed), 2 usage error.

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

let tokens = ArgumentLexer.lex(CommandLine.arguments.dropFirst())
let status: Int32
switch tokens.first {
case nil:
    printError(Usage.text)
    status = 2
case .option(let name, _)? where name == "--help" || name == "-h":
    print(Usage.text)
    status = 0
case .argument(MergeCommand.name)?:
    do {
        switch try MergeCommand.parse(tokens.dropFirst()) {
        case .help:
            print(MergeCommand.help)
            status = 0
        case .run(let command):
            try command.validate()
            status = command.run() ? 0 : 1
        }
    } catch {
        printError("error: \(error)\nRun `mentormate-bench \(MergeCommand.name) --help` for usage.")
        status = 2
    }
case .argument(APICommand.name)?:
    do {
        switch try APICommand.parse(tokens.dropFirst()) {
        case .help:
            print(APICommand.help)
            status = 0
        case .run(let command):
            status = command.run() ? 0 : 1
        }
    } catch {
        printError("error: \(error)\nRun `mentormate-bench \(APICommand.name) --help` for usage.")
        status = 2
    }
case .argument(PeersCommand.name)?:
    do {
        switch try PeersCommand.parse(tokens.dropFirst()) {
        case .help:
            print(PeersCommand.help)
            status = 0
        case .run(let command):
            status = command.run() ? 0 : 1
        }
    } catch {
        printError("error: \(error)\nRun `mentormate-bench \(PeersCommand.name) --help` for usage.")
        status = 2
    }
case .argument(CampusCommand.name)?:
    do {
        switch try CampusCommand.parse(tokens.dropFirst()) {
        case .help:
            print(CampusCommand.help)
            status = 0
        case .run(let command):
            status = command.run() ? 0 : 1
        }
    } catch {
        printError("error: \(error)\nRun `mentormate-bench \(CampusCommand.name) --help` for usage.")
        status = 2
    }
case .argument(HubCommand.name)?:
    do {
        switch try HubCommand.parse(tokens.dropFirst()) {
        case .help:
            print(HubCommand.help)
            status = 0
        case .run(let command):
            status = command.run() ? 0 : 1
        }
    } catch {
        printError("error: \(error)\nRun `mentormate-bench \(HubCommand.name) --help` for usage.")
        status = 2
    }
case .argument(ReconcileCommand.name)?:
    do {
        switch try ReconcileCommand.parse(tokens.dropFirst()) {
        case .help:
            print(ReconcileCommand.help)
            status = 0
        case .run(let command):
            status = command.run() ? 0 : 1
        }
    } catch {
        printError("error: \(error)\nRun `mentormate-bench \(ReconcileCommand.name) --help` for usage.")
        status = 2
    }
case .argument(DiscoveryCommand.name)?:
    do {
        switch try DiscoveryCommand.parse(tokens.dropFirst()) {
        case .help:
            print(DiscoveryCommand.help)
            status = 0
        case .run(let command):
            status = command.run() ? 0 : 1
        }
    } catch {
        printError("error: \(error)\nRun `mentormate-bench \(DiscoveryCommand.name) --help` for usage.")
        status = 2
    }
case .argument(WorkCommand.name)?:
    do {
        switch try WorkCommand.parse(tokens.dropFirst()) {
        case .help:
            print(WorkCommand.help)
            status = 0
        case .run(let command):
            status = command.run() ? 0 : 1
        }
    } catch {
        printError("error: \(error)\nRun `mentormate-bench \(WorkCommand.name) --help` for usage.")
        status = 2
    }
case .argument(ReconCommand.name)?:
    do {
        switch try ReconCommand.parse(tokens.dropFirst()) {
        case .help:
            print(ReconCommand.help)
            status = 0
        case .run(let command):
            status = command.run() ? 0 : 1
        }
    } catch {
        printError("error: \(error)\nRun `mentormate-bench \(ReconCommand.name) --help` for usage.")
        status = 2
    }
case .argument(let other)?:
    printError("error: unknown command '\(other)'\n\n\(Usage.text)")
    status = 2
case .option(let name, _)?:
    printError("error: unknown option '\(name)' (a command comes first)\n\n\(Usage.text)")
    status = 2
}
exit(status)
