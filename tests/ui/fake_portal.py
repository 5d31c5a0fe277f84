"""A stand-in for xdg-desktop-portal's Screenshot, on a private session bus (tests only).

``python -m tests.ui.fake_portal ADDRESS ANSWER PICTURE RECORD`` owns
``org.freedesktop.portal.Desktop`` on the bus at ADDRESS and answers each Screenshot call
the way the real portal does: a Request object path at once (built from the caller's
unique name and its ``handle_token``), then, a moment later as a dialog would, that
Request's ``Response`` signal (``ua{sv}``).  ANSWER is ``ok`` (0 and a ``file://`` URI to
PICTURE), ``cancel`` (1), ``refuse`` (2) or ``silent`` (no Response: a hung dialog).  Each
call's arguments are appended to RECORD as a JSON line.  Written with jeepney (pure-Python
D-Bus), so the app's QtDBus client meets another implementation of the wire protocol.
Prints ``ready`` once it owns the name.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from jeepney import DBusAddress, HeaderFields, Message, MessageType, new_error, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import DBusConnection, open_dbus_connection

SERVICE = "org.freedesktop.portal.Desktop"
PATH = "/org/freedesktop/portal/desktop"
CODES = {"ok": 0, "cancel": 1, "refuse": 2}
DIALOG_S = 0.05
"""The dialog's time before it answers: the signal comes after the call has returned."""


def serve(connection: DBusConnection, answer: str, picture: Path, record: Path) -> None:
    while True:
        message = connection.receive()
        if message.header.message_type != MessageType.method_call:
            continue
        fields = message.header.fields
        if (fields.get(HeaderFields.interface), fields.get(HeaderFields.member)) != (
                "org.freedesktop.portal.Screenshot", "Screenshot"):
            connection.send(new_error(message, "org.freedesktop.DBus.Error.UnknownMethod"))
            continue
        request = _request(message, record)
        connection.send(new_method_return(message, "o", (request,)))
        if answer == "silent":
            continue
        time.sleep(DIALOG_S)
        results = {"uri": ("s", picture.resolve().as_uri())} if answer == "ok" else {}
        response = new_signal(DBusAddress(request, interface="org.freedesktop.portal.Request"), "Response",
                              "ua{sv}", (CODES[answer], results))
        connection.send(response)


def _request(message: Message, record: Path) -> str:
    """The Request path of this call (the portal's rule), its arguments recorded."""
    parent, options = message.body
    plain = {key: value for key, (_, value) in options.items()}
    with record.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"parent": parent, "options": plain}) + "\n")
    sender = str(message.header.fields[HeaderFields.sender]).lstrip(":").replace(".", "_")
    return f"{PATH}/request/{sender}/{plain['handle_token']}"


def main(argv: list[str]) -> None:
    address, answer, picture, record = argv[0], argv[1], Path(argv[2]), Path(argv[3])
    connection = open_dbus_connection(bus=address)
    connection.send_and_get_reply(message_bus.RequestName(SERVICE, 4))  # 4: fail rather than queue
    print("ready", flush=True)
    serve(connection, answer, picture, record)


if __name__ == "__main__":
    main(sys.argv[1:])
