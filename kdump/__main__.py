from kdump.cli import main

main()
