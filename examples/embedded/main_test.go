package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The process prints the ready line and serves the admin API until its
// context ends; then it drains and stops cleanly.
func TestEmbedded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(runCtx, config{store: "memory", admin: "127.0.0.1:0", listen: "tcp://127.0.0.1:0", logLevel: "error"}, pw, io.Discard)
		_ = pw.CloseWithError(err)
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	fields := map[string]string{}
	for _, w := range strings.Fields(line) {
		if k, v, ok := strings.Cut(w, "="); ok {
			fields[k] = v
		}
	}
	if !strings.HasPrefix(line, "ready ") || fields["mesh"] != "game" || !strings.HasPrefix(fields["rid"], "game") || fields["endpoint"] == "" || fields["admin"] == "" {
		t.Fatalf("ready line %q", line)
	}
	resp, err := http.Get("http://" + fields["admin"] + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		RID      string `json:"rid"`
		State    string `json:"state"`
		Channels []struct {
			Name string `json:"name"`
		} `json:"channels"`
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || st.RID != fields["rid"] || st.State != "ready" || len(st.Channels) != 1 || st.Channels[0].Name != "match" {
		t.Fatalf("GET /status = %d %+v %v", resp.StatusCode, st, err)
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("run did not end after its context")
	}
}
