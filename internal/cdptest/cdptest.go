// Package cdptest is a small Chrome DevTools Protocol client for the
// dashboard's browser tests (cmd/node and test/ share it): it runs headless
// Chromium with --remote-debugging-pipe (JSON messages ended by NUL on file
// descriptors 3 and 4) and speaks just what the tests need: open a page,
// evaluate JavaScript, take a screenshot. Test support only; it owns
// nothing of the runtime.
package cdptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// chromiumNames are the executables tried, in order, when ZLINK_CHROMIUM
// does not name one. scripts/ensure-deps.sh installs the first.
var chromiumNames = []string{"chromium-headless-shell", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// FindChromium returns the browser to run, failing the test with what to
// do when there is none: the browser test never skips silently.
func FindChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ZLINK_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("ZLINK_CHROMIUM=%q: %v", p, err)
		}
		return p
	}
	for _, n := range chromiumNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Fatalf("no headless Chromium found (looked for %s in PATH): run scripts/ensure-deps.sh as root "+
		"(it installs Debian's chromium-headless-shell with apt-get), or set ZLINK_CHROMIUM to a Chromium executable",
		strings.Join(chromiumNames, ", "))
	return ""
}

// cdpBuffer is a goroutine-safe stderr buffer.
type cdpBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *cdpBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *cdpBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Browser is a running headless Chromium.
type Browser struct {
	t        *testing.T
	cmd      *exec.Cmd
	toChrome *os.File
	stderr   *cdpBuffer
	profile  string

	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpMessage
	closed  chan struct{} // the pipe from the browser ended
	readErr error
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    any             `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Start runs the browser; cleanup closes it and removes its profile.
func Start(t *testing.T) *Browser {
	t.Helper()
	bin := FindChromium(t)
	profile, err := os.MkdirTemp("", "zlink-ui-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	// fd 3: the browser reads commands; fd 4: it writes replies and events.
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--headless", "--remote-debugging-pipe", "--user-data-dir=" + profile,
		"--no-first-run", "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
		"--disable-background-networking", "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
		"--no-proxy-server", "about:blank",
	}
	if os.Geteuid() == 0 {
		args = append([]string{"--no-sandbox"}, args...) // Chromium refuses to run as root with its sandbox
	}
	b := &Browser{t: t, toChrome: cmdW, stderr: &cdpBuffer{}, profile: profile,
		pending: map[int]chan cdpMessage{}, closed: make(chan struct{})}
	b.cmd = exec.Command(bin, args...)
	b.cmd.ExtraFiles = []*os.File{cmdR, evW}
	b.cmd.Stderr = b.stderr
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers are ended with it
	b.cmd.WaitDelay = 2 * time.Second                       // a helper holding stderr open does not hold up Wait
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	cmdR.Close()
	evW.Close()
	go b.read(evR)
	t.Cleanup(b.Close)
	return b
}

func (b *Browser) read(r *os.File) {
	defer close(b.closed)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		msg, err := br.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.readErr = err
			b.mu.Unlock()
			return
		}
		var m cdpMessage
		if err := json.Unmarshal(msg[:len(msg)-1], &m); err != nil {
			continue
		}
		if m.ID == 0 {
			continue // an event; the test polls instead
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// call sends one command (to session, "" = the browser) and decodes its
// result into out (may be nil).
func (b *Browser) call(ctx context.Context, session, method string, params, out any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMessage, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(cdpMessage{ID: id, Method: method, SessionID: session, Params: params})
	if err != nil {
		return err
	}
	if _, err := b.toChrome.Write(append(msg, 0)); err != nil {
		return fmt.Errorf("%s: write to browser: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-b.closed:
		return fmt.Errorf("%s: the browser closed its pipe (%v); stderr:\n%s", method, b.readErr, b.stderr.String())
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (b *Browser) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.call(ctx, "", "Browser.close", nil, nil)
	exited := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-ctx.Done():
	}
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL) // whatever of its process group is left
	<-exited
	b.toChrome.Close()
	_ = os.RemoveAll(b.profile) // best effort: a helper may still be exiting
}

// Page is one tab attached in flat session mode.
type Page struct {
	b       *Browser
	session string
}

// openPage opens a tab of the given size on url.
func (b *Browser) OpenPage(ctx context.Context, url string, width, height int) (*Page, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		return nil, err
	}
	p := &Page{b: b, session: att.SessionID}
	if err := p.Resize(ctx, width, height); err != nil {
		return nil, err
	}
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := b.call(ctx, p.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return nil, err
	}
	if nav.ErrorText != "" {
		return nil, fmt.Errorf("navigate %s: %s", url, nav.ErrorText)
	}
	return p, nil
}

func (p *Page) Resize(ctx context.Context, width, height int) error {
	return p.b.call(ctx, p.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
}

// eval evaluates a JavaScript expression in the page and decodes its
// (JSON-serializable) value into out.
func (p *Page) Eval(ctx context.Context, expr string, out any) error {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := p.b.call(ctx, p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res); err != nil {
		return err
	}
	if e := res.ExceptionDetails; e != nil {
		return fmt.Errorf("evaluate %q: %s %s", expr, e.Text, e.Exception.Description)
	}
	if len(res.Result.Value) == 0 {
		return errors.New("evaluate: no value (undefined)")
	}
	return json.Unmarshal(res.Result.Value, out)
}

// screenshot captures the whole page as PNG: the viewport is grown to the
// document's height first.
func (p *Page) Screenshot(ctx context.Context, width int) ([]byte, error) {
	var h int
	if err := p.Eval(ctx, "Math.ceil(document.documentElement.scrollHeight)", &h); err != nil {
		return nil, err
	}
	if err := p.Resize(ctx, width, h); err != nil {
		return nil, err
	}
	var shot struct {
		Data string `json:"data"`
	}
	if err := p.b.call(ctx, p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(shot.Data)
}
