"""The workflow the artifact tests run, in the console's runtime and on a real cluster (spec 15)."""


def keeps(name: str, big_bytes: int) -> str:
    """`build` leaves out.txt ('hello') and report/summary.txt ('deep inside'), which are kept; a link to
    /etc/passwd, a fifo and big.bin of `big_bytes` zeros, which are refused (big.bin when over the bound); and a
    pattern no file matches. `read` then cats the two kept files from the run's directory."""
    return f"""
name: {name}
steps:
  - id: build
    agent: shell
    command: |
      mkdir -p report
      printf 'hello' > out.txt
      printf 'deep inside' > report/summary.txt
      ln -s /etc/passwd passwd.txt
      head -c {big_bytes} /dev/zero > big.bin
      mkfifo pipe.txt
    artifacts: ["*.txt", "report/*.txt", "big.bin", "missing.pdf"]
  - id: read
    agent: shell
    command: cat out.txt report/summary.txt
    depends_on: [build]
"""
