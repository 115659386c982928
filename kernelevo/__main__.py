from kernelevo.cli import main

raise SystemExit(main())
