// Command floor is the hardware floor custodian's step is measured
// against: the least a program must do to look at the files a step of the
// benchmark's fan-out (testdata/bench/fanout) looks at, and nothing else.
//
//	floor -jobs N [-mode hash|stat|write] RUN
//
// In hash mode it opens, reads to the end and SHA-256-hashes each of the N
// inputs and N outputs, one after another, with one buffer and one hash:
// what a step on a finished run with no hash cache cannot do without. In
// stat mode it lstats each of them: what a step with a warm cache cannot do
// without. In write mode it hashes the N inputs, then makes N directories
// under a new directory beside the run and writes a prompt-sized file in
// each, and syncs the file system once: what the first step, which hands
// out N jobs, cannot do without. It prints how many files and bytes it saw,
// and a digest of their hashes, so that nothing is skipped.
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
	mode := flag.String("mode", "hash", "hash: read and hash every file; stat: lstat every file; write: hash the inputs, write a file for each")
	flag.Parse()
	if flag.NArg() != 1 || (*mode != "hash" && *mode != "stat" && *mode != "write") {
		fmt.Fprintln(os.Stderr, "usage: floor -jobs N [-mode hash|stat|write] RUN")
		os.Exit(2)
	}
	dir := flag.Arg(0)
	inputs := make([]string, 0, *jobs)
	for i := range *jobs {
		inputs = append(inputs, filepath.Join(dir, fanout.Input(i)))
	}
	paths := append([]string(nil), inputs...)
	for i := range *jobs {
		paths = append(paths, filepath.Join(dir, fanout.Output(i)))
	}
	var err error
	switch *mode {
	case "hash":
		err = hashAll(paths)
	case "stat":
		err = statAll(paths)
	case "write":
		if err = hashAll(inputs); err == nil {
			err = writeAll(dir, *jobs)
		}
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

// prompt is about what a prompt file of the fan-out holds.
var prompt = make([]byte, 1300)

// writeAll makes a new directory beside the run, and in it n directories
// with a file each, then syncs the file system once.
func writeAll(run string, n int) error {
	top, err := os.MkdirTemp(filepath.Dir(run), filepath.Base(run)+".floor-")
	if err != nil {
		return err
	}
	for i := range n {
		d := filepath.Join(top, fmt.Sprint(i))
		if err := unix.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("mkdir %s: %w", d, err)
		}
		fd, err := unix.Open(filepath.Join(d, "prompt-1.md"), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return fmt.Errorf("create in %s: %w", d, err)
		}
		_, err = unix.Write(fd, prompt)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("write in %s: %w", d, err)
		}
	}
	fd, err := unix.Open(top, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return err
	}
	fmt.Printf("%d directories and files written\n", n)
	return nil
}
