"""The `forge` command's parts: its arguments (parser.py), what both modes print from the API's JSON shapes
(output.py), and the commands run through a server's API (remote.py). The local mode (on the server, as its
admin) is the management command, forge/runs/management/commands/forge.py."""
