from kdump.cli import entry

entry()
