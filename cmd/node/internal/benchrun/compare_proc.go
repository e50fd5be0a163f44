package benchrun

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The compare bench runs every server in a process of its own: the bench
// re-executes its own binary (ServerCommand) with the impl's flags. The
// child prints one line "endpoint <address>" once it serves, then answers
// one-line commands on stdin, one answer line each on stdout:
//
//	cpu                   -> "cpu <seconds>" (user+system CPU of the process so far)
//	profile <prefix>      -> "ok": CPU profile to <prefix>.cpu.pprof from now, allocation profile base to <prefix>.allocs-base.pprof
//	profile-stop          -> "ok": CPU profile closed, allocation profile to <prefix>.allocs.pprof
//	quit (or EOF)         -> the server stops and the process exits
//
// Failures answer "err <text>".

// cmpProcessCPU is the user+system CPU time this process has used.
func cmpProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cmpServerFlags are the server process's flags.
type cmpServerFlags struct {
	impl          string
	listen        string // host:port ("127.0.0.1:0" by default)
	rid           string // zlink: the node's routing ID
	defaultLimits bool   // protoactor: gRPC's default 4 MiB receive limit
	tlsDir        string // zlink-tls: the directory of cmpWriteTLSFiles
	redis         string // zlink-spot: the Location Store's redis-server (host:port)
}

// CompareServerMain is the server side of `zlink-node bench compare`
// (hidden subcommand `bench compare-server`): it starts the server of one
// implementation, prints its endpoint on stdout and serves the control
// commands read from stdin until "quit" or EOF.
func CompareServerMain(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("compare-server", flag.ContinueOnError)
	var f cmpServerFlags
	fs.StringVar(&f.impl, "impl", "", "zlink, protoactor, zmq4, tcp, zlink-tls, zlink-spot or protoactor-grain")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "host:port to listen on")
	fs.StringVar(&f.rid, "rid", cmpServerRID, "zlink: the server's routing ID")
	fs.BoolVar(&f.defaultLimits, "default-limits", false, "protoactor: keep gRPC's default message size limit")
	fs.StringVar(&f.tlsDir, "tls-dir", "", "zlink-tls: directory with the mesh's CA, certificate and key")
	fs.StringVar(&f.redis, "redis", "", "zlink-spot: host:port of the redis-server holding the Location Store")
	if err := fs.Parse(args); err != nil {
		return err
	}
	impl, ok := cmpImpls[f.impl]
	if !ok {
		return fmt.Errorf("benchrun: compare-server: unknown --impl %q", f.impl)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	endpoint, stop, err := impl.serve(ctx, f)
	if err != nil {
		return err
	}
	defer stop()
	out := bufio.NewWriter(stdout)
	answer := func(format string, a ...any) {
		fmt.Fprintf(out, format+"\n", a...)
		_ = out.Flush()
	}
	answer("endpoint %s", endpoint)
	var prof *cmpProfile
	in := bufio.NewScanner(stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(in.Text()), " ")
		switch cmd {
		case "cpu":
			answer("cpu %.9f", cmpProcessCPU().Seconds())
		case "profile":
			if prof != nil {
				answer("err profile already running")
				continue
			}
			p, err := cmpStartProfile(arg)
			if err != nil {
				answer("err %s", cmpOneLineErr(err))
				continue
			}
			prof = p
			answer("ok")
		case "profile-stop":
			if prof == nil {
				answer("err no profile running")
				continue
			}
			err := prof.stop()
			prof = nil
			if err != nil {
				answer("err %s", cmpOneLineErr(err))
				continue
			}
			answer("ok")
		case "quit":
			return nil
		case "":
		default:
			answer("err unknown command %q", cmd)
		}
	}
	return nil
}

func cmpOneLineErr(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// cmpProfile is a CPU profile being written and the allocation profile
// taken when it started (compare with `go tool pprof -base`).
type cmpProfile struct {
	prefix string
	cpu    *os.File
}

func cmpStartProfile(prefix string) (*cmpProfile, error) {
	if prefix == "" {
		return nil, errors.New("profile: empty path prefix")
	}
	runtime.GC()
	if err := cmpWriteAllocs(prefix + ".allocs-base.pprof"); err != nil {
		return nil, err
	}
	f, err := os.Create(prefix + ".cpu.pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return &cmpProfile{prefix: prefix, cpu: f}, nil
}

func (p *cmpProfile) stop() error {
	pprof.StopCPUProfile()
	err := p.cpu.Close()
	runtime.GC() // the allocation profile is as of the last GC
	return errors.Join(err, cmpWriteAllocs(p.prefix+".allocs.pprof"))
}

func cmpWriteAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
}

// cmpServerProc is one server child process and its control pipe.
type cmpServerProc struct {
	impl     string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	lines    chan string
	stderr   *cmpTailBuffer
	endpoint string
	mu       sync.Mutex // one control request at a time
	waitErr  error
	exited   chan struct{}
}

// cmpLauncher says how to start a server process: argv before the
// server's own flags, and extra environment.
type cmpLauncher struct {
	argv []string
	env  []string
}

// cmpDefaultLauncher re-executes this binary as `bench compare-server`.
func cmpDefaultLauncher() (cmpLauncher, error) {
	exe, err := os.Executable()
	if err != nil {
		return cmpLauncher{}, fmt.Errorf("benchrun: compare: find own executable: %w", err)
	}
	return cmpLauncher{argv: []string{exe, "bench", "compare-server"}}, nil
}

// cmpStartServer starts a server process and waits (up to 20 s) for its
// endpoint line.
func cmpStartServer(ctx context.Context, l cmpLauncher, impl string, args ...string) (*cmpServerProc, error) {
	argv := append(append(append([]string{}, l.argv...), "--impl", impl), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), l.env...)
	p := &cmpServerProc{impl: impl, cmd: cmd, lines: make(chan string, 16), stderr: &cmpTailBuffer{max: 8 << 10}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.stdin = stdin
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("benchrun: compare: start %s server: %w", impl, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	line, err := p.readLine(ctx, 20*time.Second)
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("benchrun: compare: %s server did not start: %w%s", impl, err, p.stderrNote())
	}
	ep, ok := strings.CutPrefix(line, "endpoint ")
	if !ok {
		p.kill()
		return nil, fmt.Errorf("benchrun: compare: %s server said %q%s", impl, line, p.stderrNote())
	}
	p.endpoint = ep
	return p, nil
}

func (p *cmpServerProc) stderrNote() string {
	if s := strings.TrimSpace(p.stderr.String()); s != "" {
		return "; its stderr: " + s
	}
	return ""
}

func (p *cmpServerProc) readLine(ctx context.Context, limit time.Duration) (string, error) {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			return "", errors.New("server process closed its stdout")
		}
		return line, nil
	case <-t.C:
		return "", fmt.Errorf("no answer within %v", limit)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// request sends one control command and returns its answer line.
func (p *cmpServerProc) request(cmd string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := io.WriteString(p.stdin, cmd+"\n"); err != nil {
		return "", fmt.Errorf("benchrun: compare: %s server: %w", p.impl, err)
	}
	line, err := p.readLine(context.Background(), 30*time.Second)
	if err != nil {
		return "", fmt.Errorf("benchrun: compare: %s server, %q: %w", p.impl, cmd, err)
	}
	if e, isErr := strings.CutPrefix(line, "err "); isErr {
		return "", fmt.Errorf("benchrun: compare: %s server, %q: %s", p.impl, cmd, e)
	}
	return line, nil
}

// cpu is the server process's CPU time so far.
func (p *cmpServerProc) cpu() (time.Duration, error) {
	line, err := p.request("cpu")
	if err != nil {
		return 0, err
	}
	s, ok := strings.CutPrefix(line, "cpu ")
	if !ok {
		return 0, fmt.Errorf("benchrun: compare: %s server answered %q to cpu", p.impl, line)
	}
	sec, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(sec * float64(time.Second)), nil
}

// stop asks the server to quit and waits up to 5 s; then kills it.
func (p *cmpServerProc) stop() {
	p.mu.Lock()
	_, _ = io.WriteString(p.stdin, "quit\n")
	_ = p.stdin.Close()
	p.mu.Unlock()
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.kill()
	}
}

// kill sends SIGKILL and waits for the process.
func (p *cmpServerProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// cmpTailBuffer keeps the last max bytes written to it.
type cmpTailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *cmpTailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *cmpTailBuffer) reset() {
	t.mu.Lock()
	t.b = t.b[:0]
	t.mu.Unlock()
}

func (t *cmpTailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
