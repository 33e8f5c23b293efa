import Testing

// The tiers of `scripts/test`: `--fast` skips tests with any of these tags, the full run (CI,
// plain `bash scripts/test`) runs them all. Every test target that tags a test declares the
// same three names (a tag is its name, so the targets agree).
extension Tag {
    /// Minutes of single-process work (thousands of seeds or schedules).
    @Tag static var slow: Self
    /// Starts other processes: the daemon and client, a crash child, python3, a lab.
    @Tag static var multiProcess: Self
    /// Needs root: test users, setuid, namespaces, Avahi.
    @Tag static var root: Self
}
