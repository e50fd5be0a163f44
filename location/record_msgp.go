package location

import (
	"fmt"

	"github.com/zlink-go/zlink/internal/msgp"
)

// msgReader reads a stored record with the module's msgpack reader
// (internal/msgp: every declared length is checked against the bytes that
// remain before it is used, so nothing is allocated beyond the input's
// size), in the error-returning form the record decoders use.
type msgReader struct{ r msgp.Reader }

func newMsgReader(s string) *msgReader { return &msgReader{r: msgp.Reader{B: []byte(s)}} }

// left is the number of bytes not read yet.
func (m *msgReader) left() int { return m.r.Remaining() }

func (m *msgReader) mapLen() (n int, isNil bool, err error) {
	n, isNil = m.r.MapHeader()
	return n, isNil, m.err()
}

// str reads a str or bin of at most max bytes (a copy: the decoded record
// keeps nothing of its input).
func (m *msgReader) str(max int) (string, error) {
	p := m.r.Text(max)
	return string(p), m.err()
}

// uint reads a non-negative integer of at most max, in any msgpack width.
func (m *msgReader) uint(max uint64) (uint64, error) {
	v := m.r.Uint(max)
	return v, m.err()
}

func (m *msgReader) bool() (bool, error) {
	v := m.r.Bool()
	return v, m.err()
}

// servers reads the Servers map (nil stays nil); validate checks names and
// weights.
func (m *msgReader) servers() (map[string]uint16, error) {
	n, isNil, err := m.mapLen()
	if err != nil || isNil {
		return nil, err
	}
	if n > maxServers {
		return nil, fmt.Errorf("%d servers, more than %d", n, maxServers)
	}
	out := make(map[string]uint16, n) // n ≤ maxServers and ≤ the bytes left
	for range n {
		name, err := m.str(maxNameLen)
		if err != nil {
			return nil, err
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("server %q twice", name)
		}
		w, err := m.uint(1<<16 - 1)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		out[name] = uint16(w)
	}
	return out, nil
}

// kinds reads the Spot kinds of a descriptor: nil (msgpack nil, the same
// as an absent field) or a list of at most maxKinds names; validate checks
// each name and the order.
func (m *msgReader) kinds() ([]string, error) {
	n, isNil := m.r.ArrayHeaderOrNil()
	if err := m.err(); err != nil || isNil {
		return nil, err
	}
	if n > maxKinds {
		return nil, fmt.Errorf("%d kinds, more than %d", n, maxKinds)
	}
	out := make([]string, 0, n) // n ≤ maxKinds: non-nil even when empty
	for range n {
		k, err := m.str(maxNameLen)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// skip passes over one value of a field this version does not know (a
// newer writer's), nested at most maxSkipDepth deep. Nothing is allocated.
func (m *msgReader) skip() error {
	m.r.Skip(maxSkipDepth + 1)
	return m.err()
}

// err is the reader's first problem as a record's decoder says it (the
// caller wraps it in ErrCorrupt: not the wire's protocol error).
func (m *msgReader) err() error {
	if e, ok := m.r.Err.(*msgp.Error); ok {
		return fmt.Errorf("%s at byte %d", e.Reason, e.Offset)
	}
	return m.r.Err
}
