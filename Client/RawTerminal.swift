#if canImport(Glibc)
import Glibc
#endif
import MentorAPI
import MentorCLI
import MentorSystem

/// The terminal in raw mode for `mentormate swipe` — the only termios code of the client apart
/// from the passphrase prompt's echo switch (SystemHost.readSecret). Plain ANSI: keys are read
/// as bytes (arrows are ESC [ C / ESC [ D), the size comes from TIOCGWINSZ, SIGWINCH only sets
/// a flag that the poll loop reads. A signal that ends the program puts the terminal back first.
final class RawTerminal: InteractiveTerminal {
    private var saved = termios()
    private var closed = false
    private var pending: [UInt8] = []

    /// nil unless stdin and stdout are both terminals (then the line prompt is used).
    init?() {
        guard isatty(0) == 1, isatty(1) == 1, tcgetattr(0, &saved) == 0 else { return nil }
        var raw = saved
        // No echo, no line editing, no signals from keys (Ctrl-C arrives as a byte and quits),
        // no CR/LF translation on input; output post-processing stays (so "\n" works too).
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL | BRKINT | INPCK | ISTRIP)
        raw.c_cflag |= tcflag_t(CS8)
        guard tcsetattr(0, TCSAFLUSH, &raw) == 0 else { return nil }
        TerminalRestore.saved = saved
        TerminalRestore.leaveScreen = true
        for number in TerminalRestore.signals { _ = signal(number, restoreTerminalAndResignal) }
        _ = signal(SIGWINCH) { _ in RawTerminalSignals.resized = 1 }
    }

    var size: (rows: Int, columns: Int) {
        var w = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &w) == 0, w.ws_row > 0, w.ws_col > 0 else { return (24, 80) }
        return (Int(w.ws_row), Int(w.ws_col))
    }

    func write(_ text: String) {
        StandardStream.write(text, to: 1)
    }

    func next() -> TerminalInput {
        while true {
            if RawTerminalSignals.resized != 0 {
                RawTerminalSignals.resized = 0
                return .resize
            }
            if let input = parse() { return input }
            // An ESC alone waits a moment for the rest of an arrow key's sequence.
            switch try? Syscall.poll(0, events: Int16(POLLIN), timeoutMilliseconds: pending.isEmpty ? 200 : 50) {
            case .ready?: break
            case .interrupted?: continue  // SIGWINCH, seen at the top of the loop
            case .timedOut?:
                if !pending.isEmpty { pending.removeAll(); continue }  // a lone ESC: ignored
                continue
            case nil: return .end
            }
            var buffer = [UInt8](repeating: 0, count: 64)
            let n: Int
            switch try? Syscall.read(0, into: &buffer) {
            case .done(let count)?: n = count
            case .wouldBlock?: continue
            case nil: return .end
            }
            if n == 0 { return .end }
            pending += buffer[..<n]
        }
    }

    /// One key off the front of what was read, if a whole one is there.
    private func parse() -> TerminalInput? {
        guard let first = pending.first else { return nil }
        if first == 0x1B {
            guard pending.count >= 3 else { return nil }
            let code = pending[2]
            pending.removeFirst(3)
            switch code {  // ESC [ X, or ESC O X in application cursor mode
            case UInt8(ascii: "C"): return .right
            case UInt8(ascii: "D"): return .left
            case UInt8(ascii: "A"): return .up
            case UInt8(ascii: "B"): return .down
            default: return parse()
            }
        }
        pending.removeFirst()
        switch first {
        case 0x03, 0x04: return .end  // Ctrl-C, Ctrl-D
        case 0x20...0x7E: return .character(Character(Unicode.Scalar(first)))
        default: return parse()
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        _ = tcsetattr(0, TCSAFLUSH, &saved)
        TerminalRestore.leaveScreen = false
        for number in TerminalRestore.signals { _ = signal(number, SIG_DFL) }
        _ = signal(SIGWINCH, SIG_DFL)
    }
}

/// Set by the SIGWINCH handler, read by the loop (one thread; a plain word store is enough).
enum RawTerminalSignals {
    nonisolated(unsafe) static var resized: sig_atomic_t = 0
}
