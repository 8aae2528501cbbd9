from overlog.cli import entry

entry()
