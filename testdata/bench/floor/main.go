// Command floor is the hardware floor custodian's step is measured
// against: the least a program must do to look at the files a step of the
// benchmark's fan-out (testdata/bench/fanout) looks at, and nothing else.
//
//	floor -jobs N [-mode hash|stat] RUN
//
// In hash mode it opens, reads to the end and SHA-256-hashes each of the N
// inputs and N outputs, one after another, with one buffer and one hash:
// what a step on a finished run with no hash cache cannot do without. In
// stat mode it lstats each of them: what a step with a warm cache cannot do
// without. It prints how many files and bytes it saw, and a digest of their
// hashes, so that nothing is skipped.
package main

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/custodian-run/custodian/testdata/bench/fanout"
	"golang.org/x/sys/unix"
)

func main() {
	jobs := flag.Int("jobs", 10, "how many jobs the run has")
	mode := flag.String("mode", "hash", "hash: read and hash every file; stat: lstat every file")
	flag.Parse()
	if flag.NArg() != 1 || (*mode != "hash" && *mode != "stat") {
		fmt.Fprintln(os.Stderr, "usage: floor -jobs N [-mode hash|stat] RUN")
		os.Exit(2)
	}
	dir := flag.Arg(0)
	paths := make([]string, 0, 2**jobs)
	for i := range *jobs {
		paths = append(paths, filepath.Join(dir, fanout.Input(i)))
	}
	for i := range *jobs {
		paths = append(paths, filepath.Join(dir, fanout.Output(i)))
	}
	var err error
	if *mode == "hash" {
		err = hashAll(paths)
	} else {
		err = statAll(paths)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func hashAll(paths []string) error {
	buf := make([]byte, 64<<10)
	h := sha256.New()
	all := sha256.New()
	var sum [sha256.Size]byte
	var bytes int64
	for _, p := range paths {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		h.Reset()
		for {
			n, err := unix.Read(fd, buf)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				unix.Close(fd)
				return fmt.Errorf("read %s: %w", p, err)
			}
			if n == 0 {
				break
			}
			bytes += int64(n)
			h.Write(buf[:n])
		}
		unix.Close(fd)
		all.Write(h.Sum(sum[:0]))
	}
	fmt.Printf("%d files, %d bytes, %x\n", len(paths), bytes, all.Sum(nil))
	return nil
}

func statAll(paths []string) error {
	var st unix.Stat_t
	var bytes int64
	for _, p := range paths {
		if err := unix.Lstat(p, &st); err != nil {
			return fmt.Errorf("lstat %s: %w", p, err)
		}
		bytes += st.Size
	}
	fmt.Printf("%d files, %d bytes\n", len(paths), bytes)
	return nil
}
