package placement

import (
	"fmt"
	"testing"
)

func BenchmarkPlacement_Owner(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			members := make([]Member, n)
			for i := range members {
				members[i] = ready(fmt.Sprintf("rid-%016x", i), uint32(100+i))
			}
			keys := ids(1024)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok := Owner("player", keys[i%len(keys)], members); !ok {
					b.Fatal("no owner")
				}
				i++
			}
		})
	}
}

func BenchmarkPlacement_Rank(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			members := make([]Member, n)
			for i := range members {
				members[i] = ready(fmt.Sprintf("rid-%016x", i), uint32(100+i))
			}
			keys := ids(1024)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if r := Rank("player", keys[i%len(keys)], members); len(r) != n {
					b.Fatal("short rank")
				}
				i++
			}
		})
	}
}
