package benchrun

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// A small reader of pprof profiles (profile.proto, gzipped), enough for a
// "top" list by function: flat (the leaf frame) and cumulative (anywhere
// on the stack). The full view is `go tool pprof` on the saved files.

type cmpPprofData struct {
	sampleTypes []string // type names, by value index
	units       []string
	samples     []cmpPprofSample
	locs        map[uint64][]uint64 // location id -> function ids, innermost first
	funcs       map[uint64]string   // function id -> name
}

type cmpPprofSample struct {
	locs   []uint64
	values []int64
}

func cmpReadPprof(path string) (*cmpPprofData, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return nil, err
		}
	}
	return cmpParsePprof(raw)
}

var errPprof = errors.New("malformed pprof profile")

// fields calls f for every field of a protobuf message.
func cmpPbFields(b []byte, f func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errPprof
		}
		b = b[n:]
		var v uint64
		var bs []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			bs, n = protowire.ConsumeBytes(b)
		case protowire.Fixed64Type:
			v, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var v32 uint32
			v32, n = protowire.ConsumeFixed32(b)
			v = uint64(v32)
		default:
			return errPprof
		}
		if n < 0 {
			return errPprof
		}
		b = b[n:]
		if err := f(num, typ, v, bs); err != nil {
			return err
		}
	}
	return nil
}

// cmpPbUints reads a repeated integer field, packed or not.
func cmpPbUints(typ protowire.Type, v uint64, bs []byte, dst []uint64) ([]uint64, error) {
	if typ == protowire.VarintType {
		return append(dst, v), nil
	}
	for len(bs) > 0 {
		x, n := protowire.ConsumeVarint(bs)
		if n < 0 {
			return dst, errPprof
		}
		dst = append(dst, x)
		bs = bs[n:]
	}
	return dst, nil
}

func cmpParsePprof(b []byte) (*cmpPprofData, error) {
	p := &cmpPprofData{locs: map[uint64][]uint64{}, funcs: map[uint64]string{}}
	var strs []string
	var typeIdx, unitIdx []uint64
	funcName := map[uint64]uint64{}
	err := cmpPbFields(b, func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error {
		switch num {
		case 1: // sample_type
			return cmpPbFields(bs, func(num protowire.Number, _ protowire.Type, v uint64, _ []byte) error {
				switch num {
				case 1:
					typeIdx = append(typeIdx, v)
				case 2:
					unitIdx = append(unitIdx, v)
				}
				return nil
			})
		case 2: // sample
			var s cmpPprofSample
			err := cmpPbFields(bs, func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error {
				var err error
				switch num {
				case 1:
					s.locs, err = cmpPbUints(typ, v, bs, s.locs)
				case 2:
					var vs []uint64
					vs, err = cmpPbUints(typ, v, bs, nil)
					for _, x := range vs {
						s.values = append(s.values, int64(x))
					}
				}
				return err
			})
			p.samples = append(p.samples, s)
			return err
		case 4: // location
			var id uint64
			var fns []uint64
			err := cmpPbFields(bs, func(num protowire.Number, _ protowire.Type, v uint64, bs []byte) error {
				switch num {
				case 1:
					id = v
				case 4: // line
					return cmpPbFields(bs, func(num protowire.Number, _ protowire.Type, v uint64, _ []byte) error {
						if num == 1 {
							fns = append(fns, v)
						}
						return nil
					})
				}
				return nil
			})
			p.locs[id] = fns
			return err
		case 5: // function
			var id, name uint64
			err := cmpPbFields(bs, func(num protowire.Number, _ protowire.Type, v uint64, _ []byte) error {
				switch num {
				case 1:
					id = v
				case 2:
					name = v
				}
				return nil
			})
			funcName[id] = name
			return err
		case 6: // string_table
			strs = append(strs, string(bs))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	str := func(i uint64) string {
		if i < uint64(len(strs)) {
			return strs[i]
		}
		return "?"
	}
	for id, si := range funcName {
		p.funcs[id] = str(si)
	}
	for i := range typeIdx {
		p.sampleTypes = append(p.sampleTypes, str(typeIdx[i]))
		u := ""
		if i < len(unitIdx) {
			u = str(unitIdx[i])
		}
		p.units = append(p.units, u)
	}
	return p, nil
}

// stackKey identifies a sample's stack (to subtract a base profile).
func (s cmpPprofSample) stackKey(p *cmpPprofData) string {
	var sb strings.Builder
	for _, l := range s.locs {
		for _, f := range p.locs[l] {
			sb.WriteString(p.funcs[f])
			sb.WriteByte(';')
		}
	}
	return sb.String()
}

// cmpTopOfProfile is the n functions with the most flat value of sample type
// typ ("cpu", "alloc_space"), after subtracting base when given.
func cmpTopOfProfile(path, base, typ string, n int) (CmpProfile, error) {
	out := CmpProfile{Kind: typ, File: path}
	p, err := cmpReadPprof(path)
	if err != nil {
		return out, err
	}
	idx := slices.Index(p.sampleTypes, typ)
	if idx < 0 {
		return out, fmt.Errorf("%s: no sample type %q (have %v)", path, typ, p.sampleTypes)
	}
	out.Unit = p.units[idx]
	value := map[string]int64{} // by stack
	stacks := map[string]cmpPprofSample{}
	for _, s := range p.samples {
		if idx < len(s.values) {
			k := s.stackKey(p)
			value[k] += s.values[idx]
			stacks[k] = s
		}
	}
	if base != "" {
		bp, err := cmpReadPprof(base)
		if err != nil {
			return out, err
		}
		if bidx := slices.Index(bp.sampleTypes, typ); bidx >= 0 {
			for _, s := range bp.samples {
				if k := s.stackKey(bp); bidx < len(s.values) {
					value[k] -= s.values[bidx]
				}
			}
		}
	}
	flat := map[string]float64{}
	cum := map[string]float64{}
	var total float64
	for k, v := range value {
		if v <= 0 {
			continue
		}
		s := stacks[k]
		total += float64(v)
		seen := map[string]bool{}
		first := true
		for _, l := range s.locs {
			for _, f := range p.locs[l] {
				name := p.funcs[f]
				if first {
					flat[name] += float64(v)
					first = false
				}
				if !seen[name] {
					seen[name] = true
					cum[name] += float64(v)
				}
			}
		}
	}
	out.Total = total
	names := make([]string, 0, len(flat))
	for name := range flat {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if flat[a] != flat[b] {
			if flat[a] > flat[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	entry := func(name string) CmpTopEntry {
		e := CmpTopEntry{Func: name, Flat: flat[name], Cum: cum[name]}
		if total > 0 {
			e.FlatPct = 100 * e.Flat / total
			e.CumPct = 100 * e.Cum / total
		}
		return e
	}
	for _, name := range names[:min(n, len(names))] {
		out.Top = append(out.Top, entry(name))
	}
	cnames := make([]string, 0, len(cum))
	for name := range cum {
		if !strings.HasPrefix(name, "runtime.") && !strings.HasPrefix(name, "internal/") {
			cnames = append(cnames, name)
		}
	}
	slices.SortFunc(cnames, func(a, b string) int {
		if cum[a] != cum[b] {
			if cum[a] > cum[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, name := range cnames[:min(n, len(cnames))] {
		out.TopCum = append(out.TopCum, entry(name))
	}
	return out, nil
}
