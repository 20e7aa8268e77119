"""What replacing a 1 KiB document costs the file system, with no syncs:
a new file renamed over the old one (which frees an inode and takes one),
against a spare file written over and swapped in (`RENAME_EXCHANGE`, which
does neither). Prints µs per replacement for each 2,000 in a row.

    python3 tests/harness/file_churn.py --dir /var/tmp/churn

On ext4 without a journal, making a file skips every inode freed in the
last minute (five while its table block is dirty), so the first way costs
more the more files were made and freed lately (docs/BENCHMARKS.md,
eighteenth part).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import time

RENAME_EXCHANGE = 2
AT_FDCWD = -100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="/var/tmp/memtree-churn", help="scratch folder (deleted and made again)")
    parser.add_argument("--replacements", type=int, default=30000)
    args = parser.parse_args()
    libc = ctypes.CDLL(None, use_errno=True)
    for way in ("create", "exchange"):
        root = os.path.join(args.dir, way)
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(os.path.join(root, "tmp"))
        docs = [os.path.join(root, f"doc{i}.md") for i in range(1000)]
        for path in docs:
            with open(path, "w") as f:
                f.write("x" * 1024)
        spare = os.path.join(root, "tmp", "spare")
        open(spare, "w").close()
        body = b"y" * 1024
        figures = []
        start = time.perf_counter()
        for i in range(args.replacements):
            doc = docs[i % len(docs)]
            if way == "create":
                temp = os.path.join(root, "tmp", str(i))
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                os.write(fd, body)
                os.close(fd)
                os.rename(temp, doc)
            else:
                fd = os.open(spare, os.O_WRONLY)
                os.pwrite(fd, body, 0)
                os.ftruncate(fd, len(body))
                os.close(fd)
                if libc.renameat2(AT_FDCWD, spare.encode(), AT_FDCWD, doc.encode(), RENAME_EXCHANGE) != 0:
                    raise OSError(ctypes.get_errno(), "renameat2")
            if (i + 1) % 2000 == 0:
                now = time.perf_counter()
                figures.append(f"{(now - start) / 2000 * 1e6:.0f}")
                start = now
        print(f"{way}: µs per replacement, each 2,000: {' '.join(figures)}")
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
