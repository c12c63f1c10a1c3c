package shell

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/custodian-run/custodian/web"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

// serveAddress is where serve listens unless told: this machine only, on a
// port the system picks.
const serveAddress = "127.0.0.1:0"

func serveCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "serve the runs under directories as live web pages, read-only, on this machine",
		ArgsUsage: "[DIR...] [--addr HOST:PORT] [--allow-host NAME]...",
		Description: "Serve lists the runs under each DIR (default .) as `custodian runs` does, and serves the index and\n" +
			"each run's page, which follow the runs while they are stepped or driven. It prints the address it\n" +
			"listens on, 127.0.0.1 with a free port unless --addr names another; it answers GET and HEAD only\n" +
			"and changes nothing. Another host than loopback must be given whole (0.0.0.0:8080, not :8080):\n" +
			"anyone who reaches it can read the runs. It answers requests to an address, to localhost, to the\n" +
			"name --addr gives and to each --allow-host NAME, never to another name, which a web page could\n" +
			"point at it. SIGINT or SIGTERM ends it.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "listen on `HOST:PORT`", Value: serveAddress},
			&cli.StringSliceFlag{Name: "allow-host", Usage: "answer requests to the name `NAME` too, besides addresses and localhost"},
		},
		Action: withArgs([]string{"DIR..."}, func(c *cli.Context, dirs []string) error {
			addr := c.String("addr")
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return &engine.UsageError{Message: fmt.Sprintf("serve: --addr %q is not HOST:PORT", addr), Hint: "give --addr 127.0.0.1:8080, say"}
			}
			if host == "" {
				return &engine.UsageError{Message: fmt.Sprintf("serve: --addr %q names no host, which would serve the runs on every interface", addr),
					Hint: "name the host: --addr 127.0.0.1:8080 for this machine only, --addr 0.0.0.0:8080 for every interface"}
			}
			if len(dirs) == 0 {
				dirs = []string{"."}
			}
			var hosts []string
			if net.ParseIP(host) == nil && !strings.EqualFold(host, "localhost") {
				hosts = append(hosts, strings.ToLower(host)) // the name it was told to listen on
			}
			for _, h := range c.StringSlice("allow-host") {
				hosts = append(hosts, strings.ToLower(h))
			}
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("serve: listen on %s: %w", addr, err)
			}
			tcp := l.Addr().(*net.TCPAddr)
			loopback := tcp.IP.IsLoopback()
			// Named as given, with the port the system chose: 0.0.0.0 is
			// served on every interface, which Go lists as [::].
			at := net.JoinHostPort(host, strconv.Itoa(tcp.Port))
			if !loopback {
				fmt.Fprintf(c.App.ErrWriter, "%s: warning: serving on %s: anyone who reaches this address can read the runs\n", name, at)
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			s := &http.Server{
				Handler:           (&web.Server{Registry: reg, Dirs: dirs, AnyIP: !loopback, Hosts: hosts}).Handler(),
				ReadHeaderTimeout: 10 * time.Second,
				// The pages' event streams end with the server.
				BaseContext: func(net.Listener) context.Context { return ctx },
			}
			if _, err := fmt.Fprintf(c.App.Writer, "serving http://%s/\n", at); err != nil {
				return err
			}
			done := make(chan error, 1)
			go func() { done <- s.Serve(l) }()
			select {
			case err := <-done:
				return fmt.Errorf("serve: %w", err)
			case <-ctx.Done():
			}
			shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := s.Shutdown(shut); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("serve: end: %w", err)
			}
			return nil
		}),
	}
}
