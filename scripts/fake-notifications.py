#!/usr/bin/env python3
"""A fake desktop notification server for the tests of `mentormate notify`
(Tests/EndToEndTests/NotifyTests.swift). Run it on a private session bus:

    dbus-run-session -- python3 scripts/fake-notifications.py RECORD STOP

It owns org.freedesktop.Notifications on the session bus and serves
/org/freedesktop/Notifications (Notify, GetCapabilities, GetServerInformation,
CloseNotification, with introspection). Each Notify call is appended to RECORD as one JSON
object per line: app_name, replaces_id, app_icon, summary, body, actions, hints (their names),
expire_timeout, and caller_parent — the parent PID of the calling process (for `mentormate
notify`'s notify-send or gdbus, the notify process), from the bus's GetConnectionUnixProcessID.
Prints "ready ADDRESS" once it owns the name. Ends when the file STOP exists (checked every
100 ms) or after 10 minutes, so dbus-run-session then ends its bus too.

Needs python3-gi and gir1.2-glib-2.0 (scripts/deps installs them).
"""
import json, os, sys
from gi.repository import Gio, GLib

INTERFACE = """
<node>
  <interface name="org.freedesktop.Notifications">
    <method name="Notify">
      <arg type="s" name="app_name" direction="in"/>
      <arg type="u" name="replaces_id" direction="in"/>
      <arg type="s" name="app_icon" direction="in"/>
      <arg type="s" name="summary" direction="in"/>
      <arg type="s" name="body" direction="in"/>
      <arg type="as" name="actions" direction="in"/>
      <arg type="a{sv}" name="hints" direction="in"/>
      <arg type="i" name="expire_timeout" direction="in"/>
      <arg type="u" name="id" direction="out"/>
    </method>
    <method name="GetCapabilities">
      <arg type="as" name="capabilities" direction="out"/>
    </method>
    <method name="GetServerInformation">
      <arg type="s" name="name" direction="out"/>
      <arg type="s" name="vendor" direction="out"/>
      <arg type="s" name="version" direction="out"/>
      <arg type="s" name="spec_version" direction="out"/>
    </method>
    <method name="CloseNotification">
      <arg type="u" name="id" direction="in"/>
    </method>
  </interface>
</node>
"""


def parent_of(connection, sender):
    try:
        pid = connection.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                   "GetConnectionUnixProcessID", GLib.Variant("(s)", (sender,)),
                                   GLib.VariantType("(u)"), Gio.DBusCallFlags.NONE, 5000, None).unpack()[0]
        with open(f"/proc/{pid}/stat") as f:
            # The fields after the command's closing parenthesis: state, then ppid.
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except Exception:
        return None


def main():
    record, stop = sys.argv[1], sys.argv[2]
    loop = GLib.MainLoop()
    counter = [0]

    def on_call(connection, sender, path, interface, method, parameters, invocation):
        if method == "Notify":
            app, replaces, icon, summary, body, actions, hints, timeout = parameters.unpack()
            counter[0] += 1
            entry = {"app_name": app, "replaces_id": replaces, "app_icon": icon, "summary": summary, "body": body,
                     "actions": actions, "hints": sorted(hints.keys()), "expire_timeout": timeout,
                     "caller_parent": parent_of(connection, sender)}
            with open(record, "a") as f:
                f.write(json.dumps(entry) + "\n")
            invocation.return_value(GLib.Variant("(u)", (counter[0],)))
        elif method == "GetCapabilities":
            invocation.return_value(GLib.Variant("(as)", (["body", "body-markup"],)))
        elif method == "GetServerInformation":
            invocation.return_value(GLib.Variant("(ssss)", ("fake-notifications", "MentorMate tests", "1", "1.2")))
        else:
            invocation.return_value(None)

    def on_bus(connection, name):
        node = Gio.DBusNodeInfo.new_for_xml(INTERFACE)
        connection.register_object("/org/freedesktop/Notifications", node.interfaces[0], on_call, None, None)

    def on_name(connection, name):
        print("ready " + os.environ.get("DBUS_SESSION_BUS_ADDRESS", ""), flush=True)

    def on_lost(connection, name):
        print("could not own " + name, file=sys.stderr, flush=True)
        loop.quit()

    def check_stop():
        if os.path.exists(stop):
            loop.quit()
            return False
        return True

    Gio.bus_own_name(Gio.BusType.SESSION, "org.freedesktop.Notifications", Gio.BusNameOwnerFlags.NONE,
                     on_bus, on_name, on_lost)
    GLib.timeout_add(100, check_stop)
    GLib.timeout_add_seconds(600, loop.quit)
    loop.run()


if __name__ == "__main__":
    main()
