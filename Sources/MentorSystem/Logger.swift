/// How much a log line matters. Library code (MentorNet, MentorNode) logs at `info` or below.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case trace, debug, info, notice, warning, error

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    /// The levels an operator may choose as the least important one logged (`log_level`,
    /// `--log-level`): all but `trace`, which no component logs at.
    public static let configurable: [LogLevel] = [.debug, .info, .notice, .warning, .error]

    /// The configurable level named `name` (as `description` spells it, any case).
    public init?(configured name: String) {
        guard let level = Self.configurable.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = level
    }

    public var description: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        }
    }
}

/// Where a component's log lines go. Passed in, never built inside a component; values belong in
/// `metadata` (`conn.id`, `peer.uid`), not in the message text.
public protocol Logger: Sendable {
    func log(_ level: LogLevel, _ message: String, _ metadata: [String: String])
}

extension Logger {
    public func debug(_ message: String, _ metadata: [String: String] = [:]) { log(.debug, message, metadata) }
    public func info(_ message: String, _ metadata: [String: String] = [:]) { log(.info, message, metadata) }
}

/// A logger that drops everything.
public struct DiscardingLogger: Logger {
    public init() {}
    public func log(_ level: LogLevel, _ message: String, _ metadata: [String: String]) {}
}
