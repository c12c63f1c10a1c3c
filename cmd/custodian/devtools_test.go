package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// devtools is a Chromium driven over the DevTools protocol through a pipe
// (--remote-debugging-pipe: JSON messages ending in a NUL byte, on file
// descriptors 3 and 4), with one page open: a live page is watched as it
// changes, which --dump-dom cannot do.
type devtools struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      *os.File // Chromium reads commands here
	mu      sync.Mutex
	next    int
	replies map[int]chan json.RawMessage
	session string
}

func openDevtools(t *testing.T, url string) *devtools {
	t.Helper()
	bin := chromium(t)
	toChrome, in, err := os.Pipe()
	require.NoError(t, err)
	out, fromChrome, err := os.Pipe()
	require.NoError(t, err)
	args := append(append([]string{}, chromiumFlags...), "--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	d := &devtools{t: t, cmd: exec.Command(bin, args...), in: in, replies: map[int]chan json.RawMessage{}}
	d.cmd.ExtraFiles = []*os.File{toChrome, fromChrome}
	require.NoError(t, d.cmd.Start())
	toChrome.Close()
	fromChrome.Close()
	t.Cleanup(func() {
		in.Close()
		_ = d.cmd.Process.Kill()
		_ = d.cmd.Wait()
		out.Close()
	})
	go d.read(out)
	var target struct {
		TargetID string `json:"targetId"`
	}
	d.call("", "Target.createTarget", map[string]any{"url": url}, &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	d.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	d.session = attached.SessionID
	return d
}

// read hands each reply to the call that waits for it.
func (d *devtools) read(out *os.File) {
	r := bufio.NewReader(out)
	for {
		msg, err := r.ReadBytes(0)
		if err != nil {
			return
		}
		var reply struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(msg[:len(msg)-1], &reply) != nil || reply.ID == 0 {
			continue // an event
		}
		d.mu.Lock()
		ch := d.replies[reply.ID]
		d.mu.Unlock()
		if reply.Error != nil {
			ch <- append(json.RawMessage(`{"error":`), append(reply.Error, '}')...)
			continue
		}
		ch <- reply.Result
	}
}

// call sends one command and decodes its result into v.
func (d *devtools) call(session, method string, params any, v any) {
	d.t.Helper()
	d.mu.Lock()
	d.next++
	id := d.next
	ch := make(chan json.RawMessage, 1)
	d.replies[id] = ch
	d.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	require.NoError(d.t, err)
	_, err = d.in.Write(append(data, 0))
	require.NoError(d.t, err)
	select {
	case result := <-ch:
		require.NotContains(d.t, string(result), `{"error":`, "%s: %s", method, result)
		if v != nil {
			require.NoError(d.t, json.Unmarshal(result, v))
		}
	case <-time.After(30 * time.Second):
		d.t.Fatalf("chromium did not answer %s", method)
	}
}

// eval evaluates a JavaScript expression in the page and returns its value,
// as JSON.
func (d *devtools) eval(expr string) string {
	d.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception json.RawMessage `json:"exceptionDetails"`
	}
	d.call(d.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r)
	require.Nil(d.t, r.Exception, "%s", r.Exception)
	return string(r.Result.Value)
}

// await evaluates expr until it is true, for up to limit.
func (d *devtools) await(expr string, limit time.Duration) bool {
	d.t.Helper()
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if d.eval(expr) == "true" {
			return true
		}
	}
	return false
}

func (d *devtools) String() string { return fmt.Sprintf("chromium pid %d", d.cmd.Process.Pid) }
