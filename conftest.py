# Puts the repository root on sys.path so the tests import this checkout's packages.
