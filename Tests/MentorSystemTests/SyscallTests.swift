import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import MentorSystem
import Testing

/// Serialized: the interruption tests install a process-wide SIGUSR1 handler.
@Suite(.serialized) struct SyscallTests {
    // MARK: EINTR

    @Test func callFailingWithEINTRIsRunAgain() throws {
        var calls = 0
        let result = try Syscall.blocking("test call") { () -> Int32 in
            calls += 1
            if calls < 3 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(result == 7)
        #expect(calls == 3)
    }

    @Test func nonBlockingCallTurnsEAGAINIntoAValueAndRetriesEINTR() throws {
        var calls = 0
        let result = try Syscall.nonBlocking("test call") { () -> Int in
            calls += 1
            errno = calls == 1 ? EINTR : EAGAIN
            return -1
        }
        guard case .wouldBlock = result else {
            Issue.record("expected .wouldBlock, got \(result)")
            return
        }
        #expect(calls == 2)
    }

    @Test func otherFailureThrowsWithErrnoAndWhat() {
        let error = #expect(throws: SystemError.self) {
            try Syscall.blocking("the test call") { () -> Int32 in
                errno = EACCES
                return -1
            }
        }
        #expect(error?.code == .system)
        #expect(error?.errno == EACCES)
        #expect(error?.what == "the test call")
    }

    /// A blocking read on an empty pipe is hit by signals whose handler was installed without
    /// SA_RESTART, so the kernel ends the read with EINTR; the data written after them is read
    /// all the same, by the call run again.
    @Test func readInterruptedBySignalIsRetriedAndReturnsTheData() throws {
        let calls = Atomic<Int>(0)
        let before = Interruptions.delivered.load(ordering: .relaxed)
        let read = try interruptedRead(signals: 3, then: [0x2A]) { fd in
            var buffer = [UInt8](repeating: 0, count: 4)
            let result = try? buffer.withUnsafeMutableBytes { raw in
                try Syscall.nonBlocking("read the pipe") { () -> Int in
                    calls.add(1, ordering: .relaxed)
                    return Glibc.read(fd, raw.baseAddress, raw.count)
                }
            }
            guard case .done(let count)? = result else { return nil }
            return Array(buffer[..<count])
        }
        #expect(read == [0x2A])
        #expect(Interruptions.delivered.load(ordering: .relaxed) - before == 3)
        #expect(calls.load(ordering: .relaxed) >= 2, "the read was interrupted at least once and run again")
    }

    @Test func syscallReadRetriesAfterASignal() throws {
        let before = Interruptions.delivered.load(ordering: .relaxed)
        let read = try interruptedRead(signals: 1, then: Array("ok".utf8)) { fd in
            var buffer = [UInt8](repeating: 0, count: 8)
            guard case .done(let count)? = try? Syscall.read(fd, into: &buffer) else { return nil }
            return Array(buffer[..<count])
        }
        #expect(read == Array("ok".utf8))
        #expect(Interruptions.delivered.load(ordering: .relaxed) - before == 1)
    }

    // MARK: FileDescriptor

    @Test func closeReleasesTheNumberExactlyOnce() throws {
        let (readEnd, writeEnd) = try makePipe()
        let number = readEnd.raw
        try readEnd.close()
        #expect(!readEnd.isOpen)
        #expect(readEnd.raw == -1)
        #expect(fcntl(number, F_GETFD) == -1 && errno == EBADF)

        // The number is free again; whoever gets it next keeps it, whatever the first owner does.
        let other = try Syscall.open("/dev/null", O_RDONLY | O_CLOEXEC)
        let reused = FileDescriptor(try Syscall.blocking("dup2") { dup2(other.raw, number) })
        #expect(reused.raw == number)
        try readEnd.close()
        #expect(fcntl(number, F_GETFD) != -1, "a second close() closed someone else's descriptor")
        withExtendedLifetime((readEnd, writeEnd)) {}
        #expect(fcntl(number, F_GETFD) != -1)
    }

    @Test func descriptorClosesWhenItsOwnerLetsGo() throws {
        var number: Int32 = -1
        do {
            let file = try Syscall.open("/dev/null", O_RDONLY | O_CLOEXEC)
            number = file.raw
            #expect(fcntl(number, F_GETFD) != -1)
        }
        #expect(fcntl(number, F_GETFD) == -1 && errno == EBADF)
    }

    // MARK: SystemError

    @Test func errorDescriptionNamesWhatAndTheErrno() {
        let error = SystemError(.system, errno: ENOENT, "open /no/such/file", fix: "check the path")
        #expect(error.description == "open /no/such/file: \(String(cString: strerror(ENOENT))); check the path")
        #expect(error.errnoDescription == "\(String(cString: strerror(ENOENT))) (errno \(ENOENT))")
        #expect(SystemError(.system, "no call failed").description == "no call failed")
    }

    @Test func failedOpenThrowsErrorNamingThePath() {
        let error = #expect(throws: SystemError.self) {
            try Syscall.open("/no/such/dir/file", O_RDONLY | O_CLOEXEC)
        }
        #expect(error?.errno == ENOENT)
        #expect(error?.description.contains("/no/such/dir/file") == true)
        #expect(error?.description.contains(String(cString: strerror(ENOENT))) == true)
    }

    @Test func catchPatternMatchesTheCode() {
        do {
            _ = try Syscall.open("/no/such/dir/file", O_RDONLY | O_CLOEXEC)
            Issue.record("open succeeded")
        } catch SystemError.Code.system {
            // matched by code
        } catch {
            Issue.record("not matched by code: \(error)")
        }
    }

    // MARK: Helpers

    private func makePipe() throws -> (FileDescriptor, FileDescriptor) {
        var ends: [Int32] = [-1, -1]
        try Syscall.blocking("pipe") { pipe(&ends) }
        return (FileDescriptor(ends[0]), FileDescriptor(ends[1]))
    }

    /// Runs `read` on the read end of a fresh pipe, on a thread of its own that accepts SIGUSR1
    /// (the test's threads, like Dispatch's, block signals); sends that thread `signals` SIGUSR1s
    /// 50 ms apart while it waits, then writes `data`; returns what `read` returned.
    private func interruptedRead(signals: Int, then data: [UInt8],
                                 _ read: @escaping @Sendable (Int32) -> [UInt8]?) throws -> [UInt8]? {
        let (readEnd, writeEnd) = try makePipe()
        let previous = Interruptions.install()
        defer { Interruptions.restore(previous) }
        let shared = ReaderThread()
        let fd = readEnd.raw
        let thread = Thread {
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, SIGUSR1)
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
            shared.id.withLock { $0 = pthread_self() }
            shared.started.signal()
            let bytes = read(fd)
            shared.result.withLock { $0 = bytes }
            shared.finished.signal()
        }
        thread.start()
        shared.started.wait()
        let reader = try #require(shared.id.withLock { $0 })
        for _ in 0..<signals {
            usleep(50_000)
            pthread_kill(reader, SIGUSR1)
        }
        usleep(50_000)
        try Syscall.writeAll(writeEnd.raw, data)
        try #require(shared.finished.wait(timeout: .now() + 10) == .success, "the read never returned")
        return shared.result.withLock { $0 }
    }
}

/// What the reading thread of `interruptedRead` shares with the test.
final class ReaderThread: Sendable {
    let id = Mutex<pthread_t?>(nil)
    let result = Mutex<[UInt8]?>(nil)
    let started = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
}

/// A SIGUSR1 handler installed without SA_RESTART (so a blocking read it interrupts fails with
/// EINTR), counting deliveries.
enum Interruptions {
    static let delivered = Atomic<Int>(0)

    /// Installs the handler; returns the action it replaced, for `restore`.
    static func install() -> sigaction {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in Interruptions.delivered.add(1, ordering: .relaxed) }
        action.sa_flags = 0  // no SA_RESTART
        sigemptyset(&action.sa_mask)
        var previous = sigaction()
        sigaction(SIGUSR1, &action, &previous)
        return previous
    }

    static func restore(_ previous: sigaction) {
        var previous = previous
        sigaction(SIGUSR1, &previous, nil)
    }
}
