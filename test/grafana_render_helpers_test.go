package test

// The static page of the Grafana dashboard preview: every panel of
// docs/grafana/zlink.json at its gridPos (24 columns, 30 px rows), stat
// panels with their thresholds' colors, time series as SVG lines. It
// imitates Grafana's dark theme; it is not Grafana, and says so.

import (
	"fmt"
	"html"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	previewPad     = 16 // page padding, px
	previewGap     = 8  // grid gap, px
	previewRowH    = 30 // one gridPos height unit, px
	previewHeaderH = 30 // panel title bar, px
)

// previewSeries is one series of a panel, named by its target's legend.
type previewSeries struct {
	name   string
	points []promPoint
}

type previewPanel struct {
	p      grafanaPanel
	series []previewSeries
	err    string
}

// previewMark is something the test did, drawn like an annotation.
type previewMark struct {
	at    time.Time
	label string
}

type previewPage struct {
	title, caption, vars string
	width                int
	start, end           time.Time
	step                 time.Duration
	panels               []previewPanel
	marks                []previewMark
}

var grafanaPalette = []string{"#73BF69", "#F2CC0C", "#8AB8FF", "#FF780A", "#F2495C", "#5794F2", "#B877D9", "#705DA0", "#37872D", "#FADE2A", "#447EBC", "#C15C17"}

// grafanaNamed maps Grafana's color names; a hex color passes through.
func grafanaNamed(c string) string {
	switch c {
	case "green":
		return "#73BF69"
	case "red":
		return "#F2495C"
	case "orange":
		return "#FF9830"
	case "yellow":
		return "#FADE2A"
	case "blue":
		return "#5794F2"
	case "purple":
		return "#B877D9"
	case "dark-red":
		return "#C4162A"
	case "text", "":
		return "#CCCCDC"
	}
	return c
}

var legendRe = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// legendName is Grafana's series name: the legend format with the labels
// filled in, or the metric's labels when there is none.
func legendName(format string, m map[string]string) string {
	if format != "" && format != "__auto" {
		return legendRe.ReplaceAllStringFunc(format, func(s string) string { return m[legendRe.FindStringSubmatch(s)[1]] })
	}
	var keys []string
	for k := range m {
		if k != "__name__" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", k, m[k]))
	}
	return m["__name__"] + "{" + strings.Join(parts, ", ") + "}"
}

// fixedColor returns the color a panel's overrides (or a fixed default)
// give the series named name.
func fixedColor(p grafanaPanel, name string) string {
	for _, o := range p.FieldConfig.Overrides {
		ok := false
		switch o.Matcher.ID {
		case "byName":
			ok = o.Matcher.Options == name
		case "byRegexp":
			re, err := regexp.Compile("^(?:" + o.Matcher.Options + ")$")
			ok = err == nil && re.MatchString(name)
		}
		for _, pr := range o.Properties {
			if ok && pr.ID == "color" && pr.Value.Mode == "fixed" {
				return grafanaNamed(pr.Value.FixedColor)
			}
		}
	}
	if c := p.FieldConfig.Defaults.Color; c != nil && c.Mode == "fixed" {
		return grafanaNamed(c.FixedColor)
	}
	return ""
}

// thresholdColor is the color of the highest step at or below v.
func thresholdColor(p grafanaPanel, v float64) string {
	th := p.FieldConfig.Defaults.Thresholds
	if th == nil {
		return grafanaNamed("green")
	}
	c := "green"
	for _, s := range th.Steps {
		if s.Value == nil || v >= *s.Value {
			c = s.Color
		}
	}
	return grafanaNamed(c)
}

// formatValue formats v in the panel's unit, roughly as Grafana does.
func formatValue(v float64, unit string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "NaN"
	}
	num := func(x float64) string {
		a := math.Abs(x)
		prec := 2
		switch {
		case a >= 100:
			prec = 0
		case a >= 10:
			prec = 1
		}
		s := strconv.FormatFloat(x, 'f', prec, 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		if s == "-0" {
			s = "0"
		}
		return s
	}
	short := func(x float64) string {
		for _, s := range []struct {
			f   float64
			suf string
		}{{1e9, " Bil"}, {1e6, " Mil"}, {1e3, " K"}} {
			if math.Abs(x) >= s.f {
				return num(x/s.f) + s.suf
			}
		}
		return num(x)
	}
	switch unit {
	case "percentunit":
		return num(v*100) + "%"
	case "s":
		a := math.Abs(v)
		switch {
		case a == 0:
			return "0 s"
		case a < 1e-3:
			return num(v*1e6) + " µs"
		case a < 1:
			return num(v*1e3) + " ms"
		}
		return num(v) + " s"
	case "reqps":
		return short(v) + " req/s"
	case "ops":
		return short(v) + " ops/s"
	case "bytes":
		for _, s := range []struct {
			f   float64
			suf string
		}{{1 << 30, " GiB"}, {1 << 20, " MiB"}, {1 << 10, " KiB"}} {
			if math.Abs(v) >= s.f {
				return num(v/s.f) + s.suf
			}
		}
		return num(v) + " B"
	}
	return short(v)
}

// niceStep rounds a tick distance up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if x <= m*e {
			return m * e
		}
	}
	return 10 * e
}

// renderPreview returns the whole page.
func renderPreview(pg previewPage) string {
	var b strings.Builder
	colW := float64(pg.width-2*previewPad-23*previewGap) / 24
	fmt.Fprintf(&b, `<!doctype html><html><head><meta charset="utf-8"><title>%s (preview)</title><style>%s</style></head><body>`,
		html.EscapeString(pg.title), previewCSS)
	fmt.Fprintf(&b, `<div class="top"><span class="logo">▦</span> <span class="dash">%s</span><span class="vars">%s</span></div>`,
		html.EscapeString(pg.title), pg.vars)
	fmt.Fprintf(&b, `<div class="caption">%s</div>`, pg.caption)
	b.WriteString(`<div class="grid">`)
	for _, pp := range pg.panels {
		g := pp.p.GridPos
		// Inside the panel's 1 px border.
		w := int(float64(g.W)*colW) + (g.W-1)*previewGap - 2
		h := g.H*previewRowH + (g.H-1)*previewGap - 2
		style := fmt.Sprintf(`grid-column:%d / span %d;grid-row:%d / span %d`, g.X+1, g.W, g.Y+1, g.H)
		if pp.p.Type == "row" {
			fmt.Fprintf(&b, `<div class="row" style="%s">⌄ %s</div>`, style, html.EscapeString(pp.p.Title))
			continue
		}
		fmt.Fprintf(&b, `<div class="panel" style="%s"><div class="ptitle">%s</div>`, style, html.EscapeString(pp.p.Title))
		switch {
		case pp.err != "":
			fmt.Fprintf(&b, `<div class="nodata err">%s</div>`, html.EscapeString(pp.err))
		case len(pp.series) == 0:
			b.WriteString(`<div class="nodata">No data</div>`)
		case pp.p.Type == "stat":
			renderStat(&b, pp, h-previewHeaderH)
		default:
			renderTimeseries(&b, pp, pg, w, h-previewHeaderH)
		}
		b.WriteString(`</div>`)
	}
	b.WriteString(`</div></body></html>`)
	return b.String()
}

func renderStat(b *strings.Builder, pp previewPanel, h int) {
	n := len(pp.series)
	vertical := pp.p.Options.TextMode == "name" || n > 1
	fmt.Fprintf(b, `<div class="stats %s">`, map[bool]string{true: "col", false: "rowdir"}[vertical])
	tileH := (h - 8 - 4*(n-1)) / n
	for _, s := range pp.series {
		v := s.points[len(s.points)-1].V
		c := fixedColor(pp.p, s.name)
		if c == "" {
			c = thresholdColor(pp.p, v)
		}
		style := "color:" + c
		if pp.p.Options.ColorMode == "background" {
			style = "background:" + c + ";color:#fff"
		}
		var text string
		fs := min(float64(tileH)*0.55, 44)
		switch {
		case pp.p.Options.TextMode == "name":
			text = html.EscapeString(s.name)
			fs = min(float64(tileH)*0.4, 22)
		case n > 1:
			text = `<span class="sname">` + html.EscapeString(s.name) + `</span> ` + html.EscapeString(formatValue(v, pp.p.FieldConfig.Defaults.Unit))
			fs = min(float64(tileH)*0.4, 22)
		default:
			text = html.EscapeString(formatValue(v, pp.p.FieldConfig.Defaults.Unit))
		}
		fmt.Fprintf(b, `<div class="stat" style="%s;font-size:%.0fpx">%s</div>`, style, fs, text)
	}
	b.WriteString(`</div>`)
}

// renderTimeseries draws the series of one panel in an SVG of w×h px
// (legend included).
func renderTimeseries(b *strings.Builder, pp previewPanel, pg previewPage, w, h int) {
	cust := pp.p.FieldConfig.Defaults.Custom
	unit := pp.p.FieldConfig.Defaults.Unit
	// Legend rows, estimated from the names' lengths.
	legendRows, x := 1, 0
	for _, s := range pp.series {
		iw := int(float64(len(s.name))*6.6) + 30
		if x+iw > w-16 && x > 0 {
			legendRows, x = legendRows+1, 0
		}
		x += iw
	}
	chartH := h - 8 - legendRows*18
	// Values on the step grid; stacked ones are added up in series order.
	nsteps := int(pg.end.Sub(pg.start)/pg.step) + 1
	idx := func(t time.Time) int { return int(math.Round(float64(t.Sub(pg.start)) / float64(pg.step))) }
	type grid struct {
		lo, hi []float64
		ok     []bool
	}
	stack := make([]float64, nsteps)
	grids := make([]grid, len(pp.series))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, s := range pp.series {
		g := grid{lo: make([]float64, nsteps), hi: make([]float64, nsteps), ok: make([]bool, nsteps)}
		for _, pt := range s.points {
			k := idx(pt.T)
			if k < 0 || k >= nsteps || math.IsNaN(pt.V) || math.IsInf(pt.V, 0) {
				continue
			}
			g.ok[k] = true
			g.hi[k] = pt.V
			if cust.Stacking.Mode == "normal" {
				g.lo[k] = stack[k]
				g.hi[k] = stack[k] + pt.V
				stack[k] = g.hi[k]
			}
			lo, hi = min(lo, g.hi[k]), max(hi, g.hi[k])
		}
		grids[i] = g
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	lo = min(lo, 0)
	if hi <= lo {
		hi = lo + 1
	}
	tick := niceStep((hi - lo) / 4)
	hi = math.Ceil(hi/tick) * tick
	var yLabels []string
	labelW := 0
	for v := lo; v <= hi+tick/2; v += tick {
		l := formatValue(v, unit)
		yLabels = append(yLabels, l)
		labelW = max(labelW, len([]rune(l)))
	}
	left, right, top, bottom := float64(labelW)*6.3+14, float64(w)-10, 6.0, float64(chartH)-18
	X := func(k float64) float64 { return left + (right-left)*k/float64(max(nsteps-1, 1)) }
	Y := func(v float64) float64 { return bottom - (bottom-top)*(v-lo)/(hi-lo) }
	fmt.Fprintf(b, `<svg width="%d" height="%d" class="chart">`, w, chartH)
	for i, l := range yLabels {
		y := Y(lo + float64(i)*tick)
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="gl"/><text x="%.1f" y="%.1f" class="yl">%s</text>`,
			left, right, y, y, left-6, y+4, html.EscapeString(l))
	}
	span := pg.end.Sub(pg.start)
	every := 5 * time.Second
	for _, d := range []time.Duration{10 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute} {
		if float64(span/every) <= (right-left)/80 {
			break
		}
		every = d
	}
	for t := pg.start.Truncate(every).Add(every); !t.After(pg.end); t = t.Add(every) {
		x := X(float64(t.Sub(pg.start)) / float64(pg.step))
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="gl"/>`, x, x, top, bottom)
		if x-left >= 28 && right-x >= 28 { // a label clear of the y axis and the edge
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="xl">%s</text>`, x, bottom+14, t.UTC().Format("15:04:05"))
		}
	}
	for i, m := range pg.marks {
		x := X(float64(m.at.Sub(pg.start)) / float64(pg.step))
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="mark"/><text x="%.1f" y="%.1f" class="ml">%d</text>`,
			x, x, top+12, bottom, x, top+9, i+1)
	}
	colors := make([]string, len(pp.series))
	for i, s := range pp.series {
		colors[i] = fixedColor(pp.p, s.name)
		if colors[i] == "" {
			colors[i] = grafanaPalette[i%len(grafanaPalette)]
		}
	}
	step := cust.LineInterpolation == "stepAfter"
	// path returns the vertices of vals over [k0, k1], forwards or back.
	path := func(vals []float64, k0, k1 int, back bool) []string {
		var pts []string
		add := func(k float64, v float64) { pts = append(pts, fmt.Sprintf("%.1f,%.1f", X(k), Y(v))) }
		for k := k0; k <= k1; k++ {
			if step && k > k0 {
				add(float64(k), vals[k-1])
			}
			add(float64(k), vals[k])
		}
		if back {
			slices.Reverse(pts)
		}
		return pts
	}
	for i, g := range grids {
		for k0 := 0; k0 < nsteps; k0++ {
			if !g.ok[k0] {
				continue
			}
			k1 := k0
			for k1+1 < nsteps && g.ok[k1+1] {
				k1++
			}
			upper := path(g.hi, k0, k1, false)
			if cust.FillOpacity > 0 {
				lower := path(g.lo, k0, k1, true)
				fmt.Fprintf(b, `<polygon points="%s %s" fill="%s" fill-opacity="%.2f" stroke="none"/>`,
					strings.Join(upper, " "), strings.Join(lower, " "), colors[i], cust.FillOpacity/100)
			}
			if len(upper) == 1 {
				upper = append(upper, upper[0])
			}
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="%.1f"/>`,
				strings.Join(upper, " "), colors[i], max(cust.LineWidth, 1))
			k0 = k1
		}
	}
	b.WriteString(`</svg><div class="legend">`)
	for i, s := range pp.series {
		fmt.Fprintf(b, `<span><i style="background:%s"></i>%s</span>`, colors[i], html.EscapeString(s.name))
	}
	b.WriteString(`</div>`)
}
