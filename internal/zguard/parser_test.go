package zguard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/go-zeromq/zmq4"
)

// zmtp test builders.

func greetingBytes() []byte {
	g := make([]byte, greetingLen)
	g[0] = sigHeader
	g[sigFooterAt] = sigFooter
	g[10] = 3
	copy(g[12:32], "NULL")
	return g
}

func frameBytes(flags byte, body []byte) []byte {
	if len(body) > 255 || flags&flagLong != 0 {
		h := make([]byte, 9)
		h[0] = flags | flagLong
		binary.BigEndian.PutUint64(h[1:], uint64(len(body)))
		return append(h, body...)
	}
	return append([]byte{flags, byte(len(body))}, body...)
}

func longHeader(flags byte, size uint64) []byte {
	h := make([]byte, 9)
	h[0] = flags | flagLong
	binary.BigEndian.PutUint64(h[1:], size)
	return h
}

func prop(k, v string) []byte {
	b := append([]byte{byte(len(k))}, k...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

func readyBody(props ...[]byte) []byte {
	b := append([]byte{5}, "READY"...)
	for _, p := range props {
		b = append(b, p...)
	}
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// runParser feeds data in chunks of chunk bytes (0: all at once) and
// describes every event.
func runParser(p *frameParser, data []byte, chunk int) ([]string, error) {
	var evs []string
	for off := 0; off < len(data); {
		end := len(data)
		if chunk > 0 {
			end = min(len(data), off+chunk)
		}
		for piece := data[off:end]; len(piece) > 0; {
			n, ev, err := p.next(piece)
			if err != nil {
				return evs, err
			}
			piece = piece[n:]
			switch ev {
			case eventGreeting:
				evs = append(evs, "greeting")
			case eventFrame:
				s := fmt.Sprintf("frame size=%d more=%v cmd=%v", p.size, p.more(), p.command())
				if p.capture && p.command() {
					s += fmt.Sprintf(" body=%q", p.body)
				}
				evs = append(evs, s)
			}
		}
		off = end
	}
	return evs, nil
}

func TestFrameParser(t *testing.T) {
	ready := readyBody(prop("Socket-Type", "DEALER"), prop("Identity", "abc"))
	long := bytes.Repeat([]byte("x"), 300)
	tests := []struct {
		name    string
		limit   uint64
		capture uint64 // command limit; 0: no capture
		data    []byte
		want    []string
		wantErr *FrameTooLargeError
	}{
		{
			name: "greeting and short frame", limit: 100,
			data: cat(greetingBytes(), frameBytes(0, []byte("hello"))),
			want: []string{"greeting", "frame size=5 more=false cmd=false"},
		},
		{
			name: "8-byte length", limit: 1000,
			data: cat(greetingBytes(), frameBytes(0, long)),
			want: []string{"greeting", "frame size=300 more=false cmd=false"},
		},
		{
			name: "8-byte length for a small frame", limit: 1000,
			data: cat(greetingBytes(), frameBytes(flagLong, []byte("ab"))),
			want: []string{"greeting", "frame size=2 more=false cmd=false"},
		},
		{
			name: "multipart and empty frames", limit: 100,
			data: cat(greetingBytes(), frameBytes(flagMore, nil), frameBytes(flagMore, []byte("a")), frameBytes(0, nil)),
			want: []string{"greeting", "frame size=0 more=true cmd=false", "frame size=1 more=true cmd=false", "frame size=0 more=false cmd=false"},
		},
		{
			name: "captured command", limit: 100, capture: 64,
			data: cat(greetingBytes(), frameBytes(flagCommand, ready), frameBytes(0, []byte("m"))),
			want: []string{"greeting", fmt.Sprintf("frame size=%d more=false cmd=true body=%q", len(ready), ready), "frame size=1 more=false cmd=false"},
		},
		{
			name: "uncaptured command", limit: 100,
			data: cat(greetingBytes(), frameBytes(flagCommand, ready)),
			want: []string{"greeting", fmt.Sprintf("frame size=%d more=false cmd=true", len(ready))},
		},
		{
			name: "frame over limit", limit: 299,
			data: cat(greetingBytes(), frameBytes(0, long)),
			want: []string{"greeting"}, wantErr: &FrameTooLargeError{Size: 300, Limit: 299},
		},
		{
			name: "1 TiB header", limit: 64 << 20,
			data: cat(greetingBytes(), frameBytes(0, []byte("ok")), longHeader(0, 1<<40)),
			want: []string{"greeting", "frame size=2 more=false cmd=false"}, wantErr: &FrameTooLargeError{Size: 1 << 40, Limit: 64 << 20},
		},
		{
			name: "max uint64 header", limit: 64 << 20,
			data: cat(greetingBytes(), longHeader(flagMore, ^uint64(0))),
			want: []string{"greeting"}, wantErr: &FrameTooLargeError{Size: ^uint64(0), Limit: 64 << 20},
		},
		{
			name: "command over capture limit", limit: 1000, capture: 8,
			data: cat(greetingBytes(), frameBytes(flagCommand, ready)),
			want: []string{"greeting"}, wantErr: &FrameTooLargeError{Size: uint64(len(ready)), Limit: 8, Command: true},
		},
		{
			name: "short-length frame at exact limit", limit: 5,
			data: cat(greetingBytes(), frameBytes(0, []byte("12345"))),
			want: []string{"greeting", "frame size=5 more=false cmd=false"},
		},
	}
	for _, tt := range tests {
		for _, chunk := range []int{0, 1, 2, 3, 7, 64} {
			t.Run(fmt.Sprintf("%s/chunk=%d", tt.name, chunk), func(t *testing.T) {
				p := newFrameParser(tt.limit)
				if tt.capture > 0 {
					p.withCapture(tt.capture)
				}
				got, err := runParser(&p, tt.data, chunk)
				if fmt.Sprint(got) != fmt.Sprint(tt.want) {
					t.Fatalf("events\n got %q\nwant %q", got, tt.want)
				}
				if tt.wantErr == nil {
					if err != nil {
						t.Fatalf("err = %v", err)
					}
					return
				}
				var fe *FrameTooLargeError
				if !errors.As(err, &fe) || *fe != *tt.wantErr || !errors.Is(err, ErrFrameTooLarge) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				// The parser stays failed.
				if _, _, err := p.next([]byte{0}); !errors.Is(err, ErrFrameTooLarge) {
					t.Fatalf("after failure: err = %v", err)
				}
			})
		}
	}
}

// naiveParse is the oracle: it parses a whole stream with no state machine.
func naiveParse(data []byte, limit, cmdLimit uint64, capture bool) ([]string, error) {
	if len(data) < greetingLen {
		return nil, nil
	}
	evs := []string{"greeting"}
	data = data[greetingLen:]
	for len(data) > 0 {
		fl := data[0]
		hl := headerLen(fl)
		if len(data) < hl {
			return evs, nil
		}
		var size uint64
		for _, b := range data[1:hl] {
			size = size<<8 | uint64(b)
		}
		cmd := fl&flagCommand != 0
		lim := limit
		if capture && cmd {
			lim = cmdLimit
		}
		if size > lim {
			return evs, &FrameTooLargeError{Size: size, Limit: lim, Command: cmd}
		}
		data = data[hl:]
		if uint64(len(data)) < size {
			return evs, nil
		}
		s := fmt.Sprintf("frame size=%d more=%v cmd=%v", size, fl&flagMore != 0, cmd)
		if capture && cmd {
			s += fmt.Sprintf(" body=%q", data[:size])
		}
		evs = append(evs, s)
		data = data[size:]
	}
	return evs, nil
}

func FuzzFrameParser(f *testing.F) {
	f.Add(cat(greetingBytes(), frameBytes(0, []byte("hello"))), uint8(1), true)
	f.Add(cat(greetingBytes(), frameBytes(flagCommand, readyBody(prop("Identity", "x"))), frameBytes(flagMore, []byte("a")), frameBytes(0, nil)), uint8(3), true)
	f.Add(cat(greetingBytes(), longHeader(0, 1<<40)), uint8(2), false)
	f.Add(cat(greetingBytes(), frameBytes(0, bytes.Repeat([]byte("y"), 300))), uint8(0), false)
	f.Add(cat(greetingBytes(), longHeader(flagCommand, 100), bytes.Repeat([]byte("c"), 100)), uint8(5), true)
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, capture bool) {
		const limit, cmdLimit = 256, 64
		p := newFrameParser(limit)
		if capture {
			p.withCapture(cmdLimit)
		}
		got, err := runParser(&p, data, int(chunk%17))
		want, wantErr := naiveParse(data, limit, cmdLimit, capture)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("events\n got %q\nwant %q", got, want)
		}
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("err = %v, want %v", err, wantErr)
		}
		if uint64(cap(p.body)) > 2*cmdLimit {
			t.Fatalf("captured %d bytes, limit %d", cap(p.body), cmdLimit)
		}
	})
}

func TestSniffCommand(t *testing.T) {
	tests := []struct {
		name         string
		body         []byte
		wantName     string
		wantIdentity string
		wantErr      bool
	}{
		{"ready with identity", readyBody(prop("Socket-Type", "DEALER"), prop("Identity", "abc")), "READY", "abc", false},
		{"lower-case key", readyBody(prop("socket-type", "DEALER"), prop("identity", "low")), "READY", "low", false},
		{"upper-case key is not zmq4's identity", readyBody(prop("Socket-Type", "ROUTER"), prop("IDENTITY", "up")), "READY", "", false},
		{"last identity wins", readyBody(prop("Socket-Type", "REQ"), prop("Identity", "a"), prop("Identity", "b")), "READY", "b", false},
		// zmq4 panics on a socket type it does not know (the process dies):
		// a READY without one it knows is refused here first.
		{"no properties", readyBody(), "READY", "", true},
		{"unknown socket type", readyBody(prop("Socket-Type", "DEALE\xa8"), prop("Identity", "fz")), "READY", "", true},
		{"socket type zmq4 does not read", readyBody(prop("SOCKET-TYPE", "DEALER")), "READY", "", true},
		{"other command", append([]byte{5}, "ERROR"...), "ERROR", "", false},
		{"empty body", nil, "", "", true},
		{"name longer than body", []byte{9, 'R'}, "", "", true},
		{"truncated key", append(readyBody(), 10, 'I'), "READY", "", true},
		{"truncated value length", append(readyBody(), 1, 'k', 0, 0), "READY", "", true},
		{"value longer than body", readyBody(prop("Identity", "abc")[:12]), "READY", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, id, err := sniffCommand(tt.body)
			if (err != nil) != tt.wantErr || tt.wantErr && !errors.Is(err, ErrMalformedCommand) {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if name != tt.wantName || id != tt.wantIdentity {
				t.Fatalf("got (%q, %q), want (%q, %q)", name, id, tt.wantName, tt.wantIdentity)
			}
		})
	}
}

// FuzzSniffCommand checks the READY validation against zmq4's own metadata
// decoder: what sniffCommand accepts, zmq4 decodes without panicking and
// to the same identity.
func FuzzSniffCommand(f *testing.F) {
	f.Add(readyBody(prop("Socket-Type", "ROUTER"), prop("Identity", "abc")))
	f.Add(readyBody(prop("identity", "x"), prop("X-Other", "")))
	f.Add(append(readyBody(), 3, 'a'))
	f.Fuzz(func(t *testing.T, body []byte) {
		name, id, err := sniffCommand(body)
		if err != nil || name != "READY" {
			return
		}
		md := make(zmq4.Metadata)
		props := body[1+int(body[0]):]
		if err := md.UnmarshalZMTP(props); err != nil {
			t.Fatalf("zmq4 refused what sniffCommand accepted: %v", err)
		}
		if md["Identity"] != id {
			t.Fatalf("identity %q, zmq4 says %q", id, md["Identity"])
		}
	})
}
