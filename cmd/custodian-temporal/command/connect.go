package command

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/custodian-run/custodian/cmd/custodian/shell"
)

// connectFlags are how drive and worker reach the Temporal server.
func connectFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "address", Usage: "the Temporal server's frontend, `HOST:PORT`"},
		&cli.StringFlag{Name: "namespace", Value: "default", Usage: "the Temporal namespace, `NS`"},
		&cli.StringFlag{Name: "tls-ca", Usage: "verify the server with the CA certificates in `FILE` (PEM); turns TLS on"},
		&cli.StringFlag{Name: "tls-cert", Usage: "the client certificate, `FILE` (PEM), for mutual TLS"},
		&cli.StringFlag{Name: "tls-key", Usage: "the client certificate's key, `FILE` (PEM)"},
		&cli.StringFlag{Name: "tls-server-name", Usage: "the server's name, `NAME`, when it is not the address's host"},
		&cli.BoolFlag{Name: "tls", Usage: "use TLS with the system's CA certificates"},
	}
}

// dial connects to the Temporal server the flags name. The SDK's own log
// says only what went wrong, on stderr.
func dial(c *cli.Context, stderr io.Writer) (client.Client, error) {
	if c.String("address") == "" {
		return nil, shell.Usagef(c, "--address is required: the Temporal server's frontend, HOST:PORT (temporal server start-dev listens on localhost:7233)")
	}
	opts := client.Options{
		HostPort:  c.String("address"),
		Namespace: c.String("namespace"),
		Logger:    log.NewStructuredLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))),
	}
	tlsConfig, err := tlsOf(c)
	if err != nil {
		return nil, err
	}
	opts.ConnectionOptions.TLS = tlsConfig
	cl, err := client.Dial(opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w; is the server up, and the namespace there?", opts.HostPort, opts.Namespace, err)
	}
	return cl, nil
}

// tlsOf is the TLS the flags ask for, or nil for none.
func tlsOf(c *cli.Context) (*tls.Config, error) {
	if !c.Bool("tls") && !c.IsSet("tls-ca") && !c.IsSet("tls-cert") {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: c.String("tls-server-name"), MinVersion: tls.VersionTLS12}
	if file := c.String("tls-ca"); file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read --tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, shell.Usagef(c, "--tls-ca %s holds no PEM certificate", file)
		}
	}
	if c.IsSet("tls-cert") != c.IsSet("tls-key") {
		return nil, shell.Usagef(c, "--tls-cert and --tls-key go together")
	}
	if c.IsSet("tls-cert") {
		pair, err := tls.LoadX509KeyPair(c.String("tls-cert"), c.String("tls-key"))
		if err != nil {
			return nil, fmt.Errorf("load --tls-cert and --tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
