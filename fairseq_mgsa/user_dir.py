"""`mgsa-user-dir`: print the directory to pass to fairseq's --user-dir.

fairseq resolves --user-dir as a path (relative to the working directory, then
beside the installed fairseq). A regular install puts fairseq_mgsa beside fairseq,
so `--user-dir fairseq_mgsa` works anywhere; with an editable install, or a
different site-packages, use `--user-dir "$(mgsa-user-dir)"`.
"""

import os


def path() -> str:
    return os.path.dirname(os.path.abspath(__file__))


def main():
    print(path())


if __name__ == "__main__":
    main()
