package test

// The look of the Grafana dashboard preview (Grafana's dark theme, roughly)
// and the size of its screenshot.

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"slices"
	"strconv"
)

const previewCSS = `
*{box-sizing:border-box}
body{margin:0;padding:0 16px 16px;background:#111217;color:#ccccdc;font:12px "Liberation Sans","DejaVu Sans",sans-serif}
.top{display:flex;align-items:center;gap:10px;height:44px;font-size:16px}
.logo{color:#FF9830;font-size:20px}
.dash{font-weight:bold;color:#fff}
.vars{margin-left:auto;display:flex;gap:6px;font-size:12px}
.vars span{border:1px solid #ccccdc26;border-radius:2px;padding:4px 8px;background:#181b1f}
.vars b{color:#6e9fff;font-weight:normal;margin-right:6px}
.caption{border:1px solid #ff983066;background:#ff98301a;color:#ffd8a8;border-radius:2px;padding:8px 12px;margin-bottom:10px;line-height:1.45}
.caption code{color:#fff}
.grid{display:grid;grid-template-columns:repeat(24,1fr);grid-auto-rows:30px;gap:8px}
.row{font-size:15px;font-weight:bold;color:#fff;display:flex;align-items:center;border-bottom:1px solid #ccccdc1f}
.panel{background:#181b1f;border:1px solid #ccccdc1f;border-radius:2px;overflow:hidden;display:flex;flex-direction:column}
.ptitle{height:30px;line-height:30px;padding:0 8px;font-weight:bold;color:#ccccdc;white-space:nowrap;overflow:hidden}
.nodata{flex:1;display:flex;align-items:center;justify-content:center;color:#ccccdca6;font-size:14px}
.nodata.err{color:#F2495C;font-size:12px;padding:8px}
.stats{flex:1;display:flex;gap:4px;padding:0 4px 4px}
.stats.col{flex-direction:column}
.stat{flex:1;display:flex;align-items:center;justify-content:center;border-radius:2px;font-weight:bold;overflow:hidden;white-space:nowrap;padding:0 8px}
.sname{font-weight:normal;margin-right:10px}
.chart{display:block}
.chart text{fill:#ccccdca6;font-size:11px}
.chart .yl{text-anchor:end}
.chart .xl{text-anchor:middle}
.gl{stroke:#ccccdc1a;stroke-width:1}
.ml{fill:#00d3ff!important;text-anchor:middle;font-weight:bold}
.mark{stroke:#00d3ff;stroke-width:1;stroke-dasharray:4 3;opacity:.75}
.legend{display:flex;flex-wrap:wrap;gap:0 14px;padding:0 8px 4px;line-height:18px;color:#ccccdc}
.legend i{display:inline-block;width:14px;height:4px;border-radius:2px;margin-right:6px;vertical-align:middle}
`

// previewColors are the colors the page draws with: they stay exact when
// shrinkPNG reduces the screenshot to a palette.
var previewColors = append([]string{"#111217", "#181b1f", "#ccccdc", "#ffffff", "#00d3ff", "#6e9fff", "#ffd8a8",
	"#FF9830", "#F2495C", "#73BF69", "#C4162A"}, grafanaPalette...)

// shrinkPNG re-encodes a screenshot with 256 colors: the page's own
// colors, then the most frequent others (antialiasing, blended fills),
// each pixel mapped to the nearest. The page is flat colors and text, so
// it stays legible at about a third of the size.
func shrinkPNG(raw []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	r := img.Bounds()
	at := func(x, y int) color.RGBA { return color.RGBAModel.Convert(img.At(x, y)).(color.RGBA) }
	counts := map[color.RGBA]int{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			counts[at(x, y)]++
		}
	}
	var pal color.Palette
	seen := map[color.RGBA]bool{}
	for _, h := range previewColors {
		v, err := strconv.ParseUint(h[1:], 16, 32)
		if c := (color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}); err == nil && !seen[c] {
			pal, seen[c] = append(pal, c), true
		}
	}
	others := make([]color.RGBA, 0, len(counts))
	for c := range counts {
		if !seen[c] {
			others = append(others, c)
		}
	}
	key := func(c color.RGBA) int { return int(c.R)<<16 | int(c.G)<<8 | int(c.B) }
	slices.SortFunc(others, func(a, b color.RGBA) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a] // most frequent first, then by value: the same page gives the same file
		}
		return key(a) - key(b)
	})
	for _, c := range others[:min(len(others), 256-len(pal))] {
		pal = append(pal, c)
	}
	out := image.NewPaletted(r, pal)
	index := map[color.RGBA]uint8{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := at(x, y)
			i, ok := index[c]
			if !ok {
				i = uint8(pal.Index(c))
				index[c] = i
			}
			out.SetColorIndex(x, y, i)
		}
	}
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&b, out); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
