// Command custodian-bench is custodian with a registry that holds the
// benchmark's fan-out definition (testdata/bench/fanout) and nothing else:
// the binary `make bench-cli` times.
package main

import (
	"os"

	"github.com/custodian-run/custodian/cmd/custodian/shell"
	"github.com/custodian-run/custodian/testdata/bench/fanout"
)

func main() {
	os.Exit(shell.Main(fanout.Registry(), os.Args, os.Stdout, os.Stderr))
}
