package benchrun

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Raw Go TCP: the physical reference. Frames are a 4-byte little-endian
// length and the payload; both sides read through a bufio.Reader and
// write through a bufio.Writer that is flushed only when nothing more is
// ready (the server: no complete next frame buffered; the client: the
// window is full or the run ends), so writes coalesce under load.

const (
	cmpTCPBuf      = 64 << 10
	cmpTCPMaxFrame = 64 << 20
)

func init() {
	cmpImpls["tcp"] = cmpImpl{
		name:  "tcp",
		label: "raw TCP",
		about: "net.Conn, 4-byte length-prefixed frames, buffered reads and coalesced writes",
		serve: cmpServeTCP,
		dial:  cmpDialTCP,
	}
}

func cmpServeTCP(_ context.Context, f cmpServerFlags) (string, func(), error) {
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return "", nil, fmt.Errorf("benchrun: compare: tcp listen: %w", err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmpTcpEchoConn(c)
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
			}()
		}
	}()
	stop := func() {
		_ = ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
	return ln.Addr().String(), stop, nil
}

// cmpTcpEchoConn echoes frames until the connection ends.
func cmpTcpEchoConn(c net.Conn) {
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	br := bufio.NewReaderSize(c, cmpTCPBuf)
	bw := bufio.NewWriterSize(c, cmpTCPBuf)
	var buf []byte
	for {
		p, err := cmpReadFrame(br, buf)
		if err != nil {
			return
		}
		buf = p
		if err := cmpWriteFrame(bw, p); err != nil {
			return
		}
		if !cmpFrameBuffered(br) {
			if err := bw.Flush(); err != nil {
				return
			}
		}
	}
}

// cmpReadFrame reads one frame into buf (grown as needed).
func cmpReadFrame(br *bufio.Reader, buf []byte) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return buf, err
	}
	n := binary.LittleEndian.Uint32(h[:])
	if n > cmpTCPMaxFrame {
		return buf, fmt.Errorf("frame of %d bytes over the %d limit", n, cmpTCPMaxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err := io.ReadFull(br, buf)
	return buf, err
}

func cmpWriteFrame(bw *bufio.Writer, p []byte) error {
	var h [4]byte
	binary.LittleEndian.PutUint32(h[:], uint32(len(p)))
	if _, err := bw.Write(h[:]); err != nil {
		return err
	}
	_, err := bw.Write(p)
	return err
}

// cmpFrameBuffered says whether a whole next frame is already buffered.
func cmpFrameBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n < 4 {
		return false
	}
	h, err := br.Peek(4)
	if err != nil {
		return false
	}
	return n >= 4+int(binary.LittleEndian.Uint32(h))
}

type cmpTcpClient struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

func cmpDialTCP(ctx context.Context, endpoint string, _ cmpDialOpts) (cmpClient, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return nil, fmt.Errorf("benchrun: compare: tcp dial %s: %w", endpoint, err)
	}
	_ = c.(*net.TCPConn).SetNoDelay(true)
	return &cmpTcpClient{c: c, br: bufio.NewReaderSize(c, cmpTCPBuf), bw: bufio.NewWriterSize(c, cmpTCPBuf)}, nil
}

func (c *cmpTcpClient) close() { _ = c.c.Close() }

func (c *cmpTcpClient) lockstep(payload []byte, next func() bool) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, 1<<14)
	buf := make([]byte, len(payload))
	for next() {
		t0 := time.Now()
		if err := cmpWriteFrame(c.bw, payload); err != nil {
			return lat, err
		}
		if err := c.bw.Flush(); err != nil {
			return lat, err
		}
		p, err := cmpReadFrame(c.br, buf)
		if err != nil {
			return lat, err
		}
		if len(p) != len(payload) {
			return lat, errEchoMismatch
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

func (c *cmpTcpClient) pipelined(payload []byte, window int, next func() bool) (int, error) {
	tokens := make(chan struct{}, window)
	sendErr := make(chan error, 1)
	go func() {
		defer close(tokens)
		fail := func(err error) {
			sendErr <- err
			_ = c.c.Close() // the receiver waits for echoes that will not come
		}
		for next() {
			select {
			case tokens <- struct{}{}:
			default: // the window is full: send what is buffered, then wait
				if err := c.bw.Flush(); err != nil {
					fail(err)
					return
				}
				tokens <- struct{}{}
			}
			if err := cmpWriteFrame(c.bw, payload); err != nil {
				fail(err)
				return
			}
		}
		if err := c.bw.Flush(); err != nil {
			fail(err)
		}
	}()
	got := 0
	buf := make([]byte, len(payload))
	var err error
	for range tokens {
		var p []byte
		if p, err = cmpReadFrame(c.br, buf); err == nil && len(p) != len(payload) {
			err = errEchoMismatch
		}
		if err != nil {
			_ = c.c.Close()
			for range tokens {
			}
			break
		}
		got++
	}
	select {
	case serr := <-sendErr:
		return got, errors.Join(serr, err)
	default:
	}
	return got, err
}
