package test

// Helpers of the zlink-node black-box tests: build the binary once, run
// processes on loopback, parse their output. Every child is killed and
// waited for at cleanup.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	cliBuildOnce sync.Once
	cliBinPath   string
	cliBuildErr  error
)

// cliBinDir is where this test process builds zlink-node.
func cliBinDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("zlink-node-clitest-%d-%d", os.Getuid(), os.Getpid()))
}

// cliBinary builds ./cmd/node once per test run from the module root.
func cliBinary(t *testing.T) string {
	t.Helper()
	cliBuildOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			cliBuildErr = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		// One directory per test process: two checkouts testing at once
		// never run each other's binary. TestMain removes it.
		dir := cliBinDir()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			cliBuildErr = err
			return
		}
		cliBinPath = filepath.Join(dir, "zlink-node")
		cmd := exec.Command("go", "build", "-o", cliBinPath, "./cmd/node")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			cliBuildErr = fmt.Errorf("go build ./cmd/node: %v\n%s", err, b)
		}
	})
	if cliBuildErr != nil {
		t.Fatal(cliBuildErr)
	}
	return cliBinPath
}

// cliResult is a finished zlink-node invocation.
type cliResult struct {
	stdout, stderr string
	code           int
}

// cliRun runs zlink-node with args and waits for it (bounded by timeout).
func cliRun(t *testing.T, timeout time.Duration, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliBinary(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := cliResult{stdout: out.String(), stderr: errb.String()}
	if ctx.Err() != nil {
		t.Fatalf("zlink-node %s: did not finish within %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), timeout, res.stdout, res.stderr)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("zlink-node %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// cliProc is a zlink-node child that keeps running.
type cliProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *cliBuffer
	lines  chan string // stdout lines
	done   chan struct{}
	code   int
}

type cliBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *cliBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *cliBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// cliStart starts zlink-node with args; cleanup kills it and waits.
func cliStart(t *testing.T, args ...string) *cliProc {
	t.Helper()
	return procStart(t, cliBinary(t), args...)
}

// procStart starts the program bin with args; cleanup kills it and waits.
func procStart(t *testing.T, bin string, args ...string) *cliProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	p := &cliProc{t: t, cmd: cmd, stderr: &cliBuffer{}, lines: make(chan string, 1024), done: make(chan struct{})}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", filepath.Base(bin), err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default: // nobody reads past the lines the test waits for
			}
		}
		_, _ = io.Copy(io.Discard, out)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// nextLine returns the next stdout line, failing after d.
func (p *cliProc) nextLine(d time.Duration) string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("zlink-node exited before printing a line; stderr:\n%s", p.stderr.String())
		}
		return l
	case <-time.After(d):
		p.t.Fatalf("no stdout line within %s; stderr:\n%s", d, p.stderr.String())
	}
	return ""
}

// wait waits for the process to exit and returns its status.
func (p *cliProc) wait(d time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		p.t.Fatalf("zlink-node did not exit within %s; stderr:\n%s", d, p.stderr.String())
	}
	return -1
}

func (p *cliProc) signal(s syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(s); err != nil {
		p.t.Fatalf("signal %v: %v", s, err)
	}
}

// cliNode is a `zlink-node run` child and what its ready line says.
type cliNode struct {
	*cliProc
	mesh, rid, endpoint, admin string
}

// peerArg is ENDPOINT#RID for --peer.
func (n *cliNode) peerArg() string { return n.endpoint + "#" + n.rid }

// cliStartNode runs `zlink-node run args…` and waits for its ready line.
func cliStartNode(t *testing.T, args ...string) *cliNode {
	t.Helper()
	p := cliStart(t, append([]string{"run"}, args...)...)
	line := p.nextLine(20 * time.Second)
	f := cliFields(line)
	if !strings.HasPrefix(line, "ready ") || f["rid"] == "" || f["endpoint"] == "" || f["admin"] == "" {
		t.Fatalf("want a ready line, got %q; stderr:\n%s", line, p.stderr.String())
	}
	return &cliNode{cliProc: p, mesh: f["mesh"], rid: f["rid"], endpoint: f["endpoint"], admin: f["admin"]}
}

// cliFields parses the key=value words of a line.
func cliFields(line string) map[string]string {
	out := map[string]string{}
	for _, w := range strings.Fields(line) {
		if k, v, ok := strings.Cut(w, "="); ok {
			out[k] = v
		}
	}
	return out
}

// cliSummary is the parsed summary line of `request`.
type cliSummary struct {
	ok, errors int
	byRID      map[string]int
}

func parseSummary(t *testing.T, stdout string) cliSummary {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "summary ") {
		t.Fatalf("last line is not a summary: %q", last)
	}
	f := cliFields(last)
	s := cliSummary{byRID: map[string]int{}}
	var err error
	if s.ok, err = strconv.Atoi(f["ok"]); err != nil {
		t.Fatalf("summary ok=%q", f["ok"])
	}
	if s.errors, err = strconv.Atoi(f["errors"]); err != nil {
		t.Fatalf("summary errors=%q", f["errors"])
	}
	if f["by_rid"] != "" {
		for _, part := range splitTop(f["by_rid"]) {
			rid, n, _ := strings.Cut(part, ":")
			n, _, _ = strings.Cut(n, "(") // "a:61(10.2%,weight=100)"
			v, err := strconv.Atoi(n)
			if err != nil {
				t.Fatalf("summary by_rid %q", f["by_rid"])
			}
			s.byRID[rid] = v
		}
	}
	// The per-result lines (--lines) or the per-kind error lines (the
	// default) agree with the summary.
	var ok, bad, kinds int
	perCall := false
	for _, l := range lines[:len(lines)-1] {
		switch {
		case strings.HasPrefix(l, "ok rid="):
			ok++
			perCall = true
		case strings.HasPrefix(l, "error ") && cliFields(l)["count"] != "":
			n, err := strconv.Atoi(cliFields(l)["count"])
			if err != nil {
				t.Fatalf("error kind line %q", l)
			}
			kinds += n
		case strings.HasPrefix(l, "error "):
			bad++
			perCall = true
		}
	}
	if perCall && (ok != s.ok || bad != s.errors) {
		t.Fatalf("result lines ok=%d errors=%d disagree with %q", ok, bad, last)
	}
	if !perCall && kinds != s.errors {
		t.Fatalf("error kind lines count %d errors, summary %q", kinds, last)
	}
	return s
}

// splitTop splits a by_rid value at the commas outside parentheses.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// cliGetJSON GETs an admin path and decodes the JSON body into v.
func cliGetJSON(t *testing.T, admin, path string, v any) int {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + admin + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: decode: %v", path, err)
		}
	}
	return resp.StatusCode
}

// cliStatus is the part of GET /status the tests read.
type cliStatus struct {
	Mesh       string `json:"mesh"`
	RID        string `json:"rid"`
	Generation uint64 `json:"generation"`
	State      string `json:"state"`
	Inflight   int64  `json:"inflight"`
	Peers      []struct {
		RID   string `json:"rid"`
		State string `json:"state"`
	} `json:"peers"`
	Channels []struct {
		Name   string `json:"name"`
		Role   string `json:"role"`
		Weight *int   `json:"weight"`
	} `json:"channels"`
	Counters map[string]uint64 `json:"counters"`
}

func (s cliStatus) peerState(rid string) string {
	for _, p := range s.Peers {
		if p.RID == rid {
			return p.State
		}
	}
	return ""
}

// cliWait polls cond until it holds, failing after d.
func cliWait(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", d, what)
		}
		<-time.After(20 * time.Millisecond) // poll interval of a condition wait
	}
}

// oneLineStderr returns the only non-empty stderr line, failing otherwise.
func oneLineStderr(t *testing.T, r cliResult) string {
	t.Helper()
	s := strings.TrimSpace(r.stderr)
	if s == "" || strings.Contains(s, "\n") {
		t.Fatalf("want exactly one line on stderr, got %q", r.stderr)
	}
	return s
}
