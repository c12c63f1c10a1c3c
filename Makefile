# The two commands the README gives, and the checks CI runs.

.PHONY: demo test check bench

demo:
	go run ./cmd/custodian trial demo

test:
	go test ./...

check:
	bash .ci/run

bench:
	go test -run '^$$' -bench . -benchtime 3x ./workflow
