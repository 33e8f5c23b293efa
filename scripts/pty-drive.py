#!/usr/bin/env python3
"""Runs a command in a pseudo-terminal and plays a script against it, for the tests of
`mentormate swipe` (Tests/EndToEndTests/SwipeTests.swift).

    pty-drive.py ROWS COLS STEPS.json -- COMMAND [ARG...]

STEPS is a JSON list of {"expect": TEXT} (wait up to 15 s until TEXT appears in the output
after the previous expect's match), {"send": TEXT}, {"resize": [ROWS, COLS]} (TIOCSWINSZ on the
terminal: the kernel sends SIGWINCH to the command) and {"exit": true} (wait for the command to
end). Prints one JSON object: {"ok", "failed" (the step that failed, or null), "status",
"output" (everything the command wrote, as text)}. Exits 0 even when a step failed: the test
decides.
"""
import fcntl, json, os, pty, select, signal, struct, sys, termios, time

def main():
    rows, cols, steps_file = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    command = sys.argv[sys.argv.index("--") + 1:]
    steps = json.load(open(steps_file))
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    output = b""
    mark = 0
    failed = None
    status = None

    def pump(timeout):
        nonlocal output
        r, _, _ = select.select([fd], [], [], timeout)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return False
            if not data:
                return False
            output += data
        return True

    for i, step in enumerate(steps):
        if "expect" in step:
            want = step["expect"].encode()
            deadline = time.time() + 15
            while True:
                at = output.find(want, mark)
                if at >= 0:
                    mark = at + len(want)
                    break
                if time.time() > deadline or not pump(0.1):
                    if output.find(want, mark) >= 0:
                        continue
                    failed = {"step": i, **step}
                    break
            if failed:
                break
        elif "send" in step:
            os.write(fd, step["send"].encode())
        elif "resize" in step:
            r, c = step["resize"]
            fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", r, c, 0, 0))
        elif "exit" in step:
            deadline = time.time() + 15
            while time.time() < deadline:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = os.waitstatus_to_exitcode(st)
                    break
                pump(0.05)
            if status is None:
                failed = {"step": i, **step}
                break
            while pump(0.05):
                pass
    if status is None:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
    print(json.dumps({"ok": failed is None, "failed": failed, "status": status,
                      "output": output.decode("utf-8", "replace")}))

main()
