#if canImport(Glibc)
import Glibc
#endif

/// The process's memory as Linux reports it in /proc/self/status.
enum ProcessMemory {
    /// Peak resident set size (VmHWM), in KiB.
    static var peakKB: Int? { status("VmHWM") }
    /// Current resident set size (VmRSS), in KiB.
    static var currentKB: Int? { status("VmRSS") }

    /// Resets VmHWM to the current RSS (writing 5 to /proc/self/clear_refs, Linux ≥ 4.0).
    /// False if the kernel refused.
    static func resetPeak() -> Bool {
        guard let f = fopen("/proc/self/clear_refs", "w") else { return false }
        let ok = fputs("5", f) >= 0
        return fclose(f) == 0 && ok
    }

    /// Hands freed heap memory back to the kernel (glibc's `malloc_trim`, looked up at run time
    /// because the Glibc module does not export <malloc.h>), so RSS after a big temporary
    /// allocation reflects what is still in use. Does nothing on another C library.
    static func releaseFreedMemory() {
        typealias MallocTrim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(nil, "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
    }

    private static func status(_ field: String) -> Int? {
        guard let f = fopen("/proc/self/status", "r") else { return nil }
        defer { fclose(f) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), f) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard text.hasPrefix(field + ":") else { continue }
            return Int(text.dropFirst(field.count + 1).filter(\.isNumber))
        }
        return nil
    }
}

/// Number formatting for the report.
enum Format {
    static func grouped(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }

    static func fixed(_ x: Double, _ places: Int) -> String {
        guard x.isFinite else { return "\(x)" }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = Int((x * scale).rounded())
        let whole = scaled / Int(scale), frac = abs(scaled % Int(scale))
        guard places > 0 else { return "\(whole)" }
        let f = String(frac)
        return "\(scaled < 0 && whole == 0 ? "-" : "")\(whole).\(String(repeating: "0", count: places - f.count))\(f)"
    }

    static func seconds(_ d: Duration) -> String { fixed(d.seconds, 2) + " s" }
    static func millis(_ d: Duration) -> String { fixed(d.seconds * 1000, 1) + " ms" }
    static func ratio(_ x: Double) -> String { fixed(x, 3) + "x" }
    static func megabytes(_ bytes: Int) -> String { fixed(Double(bytes) / 1_048_576, 1) + " MB" }
    static func kilobytes(_ kb: Int?) -> String { kb.map { fixed(Double($0) / 1024, 1) + " MB" } ?? "unknown" }

    static func pad(_ s: String, _ width: Int, left: Bool = false) -> String {
        let gap = String(repeating: " ", count: max(0, width - s.count))
        return left ? gap + s : s + gap
    }

    static func row(_ label: String, _ rate: Double, _ records: Int, _ elapsed: Duration) -> String {
        pad(label, 40) + pad(grouped(Int(rate.rounded())), 11, left: true) + pad(grouped(records), 11, left: true)
            + pad(seconds(elapsed), 9, left: true)
    }
}

extension Duration {
    var seconds: Double {
        let c = components
        return Double(c.seconds) + Double(c.attoseconds) / 1e18
    }
}

/// CPU time used by this process and by the whole machine, to tell how much of the machine a
/// phase had to itself (other builds and tests on the same host make figures noisy).
struct CPUSample {
    /// Seconds of CPU this process used (user + system), from getrusage.
    var own: Double
    /// Seconds of CPU the machine spent busy (user, nice, system, irq, softirq), all cores, from /proc/stat.
    var machineBusy: Double
    /// Seconds the hypervisor gave the machine's CPUs to someone else (steal), all cores.
    var steal: Double
    var at: ContinuousClock.Instant

    static func now() -> CPUSample {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let own = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        var busy = 0.0, steal = 0.0
        if let f = fopen("/proc/stat", "r") {
            defer { fclose(f) }
            var line = [CChar](repeating: 0, count: 512)
            if fgets(&line, Int32(line.count), f) != nil {
                let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                let ticks = text.split(separator: " ").dropFirst().compactMap { Double($0.filter(\.isNumber)) }
                let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
                if ticks.count >= 8, hz > 0 {
                    // user nice system idle iowait irq softirq steal
                    busy = (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]) / hz
                    steal = ticks[7] / hz
                }
            }
        }
        return CPUSample(own: own, machineBusy: busy, steal: steal, at: ContinuousClock.now)
    }

    /// Cores' worth of CPU that other processes used from `start` to `self`.
    func others(since start: CPUSample) -> Double {
        let wall = (at - start.at).seconds
        guard wall > 0 else { return 0 }
        return max(0, (machineBusy - start.machineBusy) - (own - start.own)) / wall
    }

    /// "this process 1.93 cores, others 0.04 cores" over the interval from `start` to `self`.
    func usage(since start: CPUSample) -> String {
        let wall = (at - start.at).seconds
        guard wall > 0 else { return "" }
        let own = (self.own - start.own) / wall
        let others = others(since: start)
        let stolen = (steal - start.steal) / wall
        return "cpu: this process \(Format.fixed(own, 2)) cores, other processes \(Format.fixed(others, 2)) cores"
            + (stolen >= 0.01 ? ", stolen by the hypervisor \(Format.fixed(stolen, 2)) cores" : "")
    }
}
