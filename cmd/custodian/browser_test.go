package main

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The pages are tested in a real browser: headless Chromium, from Debian's
// package (.ci/run installs it). Where none can be had the browser tests
// are skipped and say why; CI sets CUSTODIAN_BROWSER_REQUIRED, which makes
// a missing browser a failure instead.

// chromiumFlags start Chromium as this machine lets it run: no sandbox
// (tests run as root), no GPU, and none of the connections to Google's
// services that a closed network refuses.
var chromiumFlags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions"}

// chromium returns the browser's path, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("CUSTODIAN_BROWSER"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	const why = "no Chromium on PATH (install Debian's chromium package, or name one in CUSTODIAN_BROWSER)"
	if os.Getenv("CUSTODIAN_BROWSER_REQUIRED") != "" {
		t.Fatal(why + "; CUSTODIAN_BROWSER_REQUIRED is set, so the browser tests may not be skipped")
	}
	t.Skip(why)
	return ""
}

// browse runs Chromium on url with args, headless, in a profile of its own,
// and returns what it printed.
func browse(t *testing.T, url string, args ...string) string {
	t.Helper()
	bin := chromium(t)
	full := append(append(append([]string{}, chromiumFlags...), "--user-data-dir="+t.TempDir()), args...)
	cmd := exec.Command(bin, append(full, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	require.NoError(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "chromium: %s", stderr.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("chromium did not end within a minute: %s", stderr.String())
	}
	return stdout.String()
}
