package fault

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// ErrChildExited is returned when a child ended before what was waited
// for.
var ErrChildExited = errors.New("fault: child process exited")

// Child is a child process that prints "READY <fields...>" on stdout once
// it is serving, and runs until killed or until its stdin closes (so it
// ends with its parent). On Linux the kernel also kills it when the
// parent dies.
type Child struct {
	cmd    *exec.Cmd
	pid    int
	ready  []string
	stdin  io.WriteCloser
	waited chan struct{}
	lines  chan string // stdout lines after READY (buffered; extra lines dropped)
}

// StartChild starts cmd (its Stdout and Stdin must be unset) and waits up
// to timeout for its READY line. On failure the process is killed.
func StartChild(cmd *exec.Cmd, timeout time.Duration) (*Child, error) {
	configureChild(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Child{cmd: cmd, pid: cmd.Process.Pid, stdin: stdin, waited: make(chan struct{}), lines: make(chan string, 16)}
	first := make(chan string, 1)
	go func() {
		// Reads until the child's stdout closes (it exits); ends by itself.
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		if !sc.Scan() {
			close(first)
			return
		}
		first <- sc.Text()
		for sc.Scan() {
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
	}()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	select {
	case line, ok := <-first:
		f := strings.Fields(line)
		if !ok || len(f) < 1 || f[0] != "READY" {
			c.Kill()
			return nil, fmt.Errorf("fault: child %s: no READY line: %q", cmd.Path, line)
		}
		c.ready = f[1:]
		return c, nil
	case <-deadline.C:
		c.Kill()
		return nil, fmt.Errorf("fault: child %s: no READY line within %v", cmd.Path, timeout)
	}
}

// Pid is the child's process id.
func (c *Child) Pid() int { return c.pid }

// Ready is the fields of the READY line after the word READY.
func (c *Child) Ready() []string { return c.ready }

// WaitLine waits up to timeout for the child to print want.
func (c *Child) WaitLine(want string, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				return fmt.Errorf("%w before printing %q", ErrChildExited, want)
			}
			if l == want {
				return nil
			}
		case <-deadline.C:
			return fmt.Errorf("fault: child %d did not print %q within %v", c.pid, want, timeout)
		}
	}
}

// WriteLine writes line and a newline to the child's stdin (for children
// that take commands there).
func (c *Child) WriteLine(line string) error {
	_, err := io.WriteString(c.stdin, line+"\n")
	return err
}

// Kill sends SIGKILL (it works on a stopped child too) and reaps the
// child. Idempotent.
func (c *Child) Kill() {
	select {
	case <-c.waited:
		return
	default:
	}
	_ = c.cmd.Process.Kill()
	_ = c.stdin.Close()
	_ = c.cmd.Wait() // also closes stdout, which ends the reader goroutine
	close(c.waited)
}

// Stop freezes the child (SIGSTOP): its sockets stay open, it answers
// nothing.
func (c *Child) Stop() error { return syscall.Kill(c.pid, syscall.SIGSTOP) }

// Cont thaws a stopped child (SIGCONT).
func (c *Child) Cont() error { return syscall.Kill(c.pid, syscall.SIGCONT) }
