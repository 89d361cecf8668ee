"""`python -m workers.run.probe FOLDER…`: whether this user can run a worker here, for `geogate dev` started as root.

It starts as a worker would (imports the worker's app), then lists the folders among its arguments it cannot write
in: exit 0 when it can, 3 with the list on standard output when it cannot; any other failure (an interpreter or a
package this user cannot read) ends it as Python does.
"""

import os
import sys

import workers.app  # noqa: F401  (what a worker imports first: a user who cannot read it cannot run one)


def main(folders: list[str]) -> int:
    blocked = [f for f in folders if os.path.isdir(f) and not os.access(f, os.W_OK | os.X_OK)]
    if blocked:
        print("cannot write in " + ", ".join(blocked), end="")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
