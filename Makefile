# The two commands the README gives, and the checks CI runs.

.PHONY: demo test check bench bench-cli bench-drive

demo:
	go run ./cmd/custodian trial demo

test:
	go test ./...

check:
	bash .ci/run

# The Go benchmarks of a step (docs/performance.md): N = 10 to 10,000 jobs
# and 100 jobs of 1 MiB, finished runs with the hash cache cold and warm,
# and the first step.
bench:
	go test -run '^$$' -bench . -benchtime 3x -benchmem ./workflow/engine

# Whole processes against the floor program, in one table (docs/performance.md).
bench-cli:
	go run ./testdata/bench/cli

# A run's wall time under custodian drive against the ideal list schedule
# and the old round barrier (docs/performance.md): about 40 s a run.
bench-drive:
	go test -run '^$$' -bench BenchmarkDrivePipelines -benchtime 3x ./cmd/custodian
