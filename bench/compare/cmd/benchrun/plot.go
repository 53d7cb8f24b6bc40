package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/actord/actord/bench/compare"
)

// series is one line of a plot: a system's medians against workers.
type series struct {
	name     string
	xs       []float64
	med      []float64
	low, hig []float64 // min and max
}

// writePlots draws one plot per program (its figure against workers, one
// line per system, median with min/max error bars) and one of the executor's
// peak RSS, each as SVG and PNG. It returns the names drawn.
func writePlots(dir string, st map[point]*stat, workers []int) (map[string]bool, error) {
	drawn := map[string]bool{}
	for _, prog := range compare.Programs {
		var ss []series
		for _, sys := range prog.Systems {
			s := series{name: sys}
			for _, w := range workers {
				if v := st[point{prog.Name, sys, w}]; v != nil {
					s.xs = append(s.xs, float64(w))
					s.med = append(s.med, v.med)
					s.low = append(s.low, v.min)
					s.hig = append(s.hig, v.max)
				}
			}
			if len(s.xs) > 0 {
				ss = append(ss, s)
			}
		}
		if len(ss) == 0 {
			continue
		}
		better := "higher is better"
		if prog.Metric.Lower {
			better = "lower is better"
		}
		if err := drawPlot(filepath.Join(dir, prog.Name), prog.Name+": "+prog.Metric.Label+", "+better, prog.Metric.Label, ss, workers); err != nil {
			return nil, fmt.Errorf("plot %s: %w", prog.Name, err)
		}
		drawn[prog.Name] = true
	}
	var ss []series
	for _, sys := range compare.Systems {
		s := series{name: sys}
		for _, w := range workers {
			if v := st[point{"executor", sys, w}]; v != nil {
				const mib = 1 << 20
				s.xs = append(s.xs, float64(w))
				s.med = append(s.med, v.rssMed/mib)
				s.low = append(s.low, slices.Min(v.rss)/mib)
				s.hig = append(s.hig, slices.Max(v.rss)/mib)
			}
		}
		if len(s.xs) > 0 {
			ss = append(ss, s)
		}
	}
	if len(ss) > 0 {
		if err := drawPlot(filepath.Join(dir, "memory"), "executor: peak RSS (lower is better)", "peak RSS (MiB)", ss, workers); err != nil {
			return nil, fmt.Errorf("plot memory: %w", err)
		}
		drawn["memory"] = true
	}
	return drawn, nil
}

// systemColor gives each system its own colour in every plot: actord's
// variants in reds, the peers in other hues.
func systemColor(system string) color.Color {
	switch system {
	case compare.Actord:
		return color.RGBA{R: 200, G: 30, B: 30, A: 255}
	case compare.ActordNoSteal:
		return color.RGBA{R: 240, G: 130, B: 40, A: 255}
	case compare.ActordRandom:
		return color.RGBA{R: 170, G: 60, B: 160, A: 255}
	case compare.Chan:
		return color.RGBA{R: 90, G: 90, B: 90, A: 255}
	case compare.ProtoActor:
		return color.RGBA{R: 40, G: 100, B: 200, A: 255}
	case compare.Hollywood:
		return color.RGBA{R: 30, G: 150, B: 70, A: 255}
	}
	return color.Black
}

// errPoints is a series as plotter input with error bars.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

func drawPlot(base, title, ylabel string, ss []series, workers []int) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "workers (GOMAXPROCS)"
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	p.Legend.Left = true
	ticks := make(plot.ConstantTicks, len(workers))
	for i, w := range workers {
		ticks[i] = plot.Tick{Value: float64(w), Label: strconv.Itoa(w)}
	}
	p.X.Tick.Marker = ticks
	logX := len(workers) >= 3
	if logX {
		p.X.Scale = plot.LogScale{}
	}
	ymax := 0.0
	for i, s := range ss {
		xys := make(plotter.XYs, len(s.xs))
		yerr := make(plotter.YErrors, len(s.xs))
		// Spread the systems a little along x so that error bars do not
		// hide each other.
		off := float64(i) - float64(len(ss)-1)/2
		for j := range s.xs {
			x := s.xs[j] + 0.03*off
			if logX {
				x = s.xs[j] * math.Pow(1.03, off)
			}
			xys[j] = plotter.XY{X: x, Y: s.med[j]}
			yerr[j].Low, yerr[j].High = s.med[j]-s.low[j], s.hig[j]-s.med[j]
			ymax = max(ymax, s.hig[j])
		}
		line, scatter, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		c := systemColor(s.name)
		line.Color = c
		line.Dashes = plotutil.Dashes(slices.Index(compare.Systems, s.name))
		scatter.Color = c
		scatter.Shape = plotutil.Shape(slices.Index(compare.Systems, s.name))
		bars, err := plotter.NewYErrorBars(errPoints{xys, yerr})
		if err != nil {
			return err
		}
		bars.Color = c
		p.Add(line, scatter, bars)
		p.Legend.Add(s.name, line, scatter)
	}
	// From zero, so that heights compare as ratios, with room for the legend.
	p.Y.Min = 0
	p.Y.Max = ymax * (1.1 + 0.07*float64(len(ss)))
	lo, hi := float64(workers[0]), float64(workers[len(workers)-1])
	if logX {
		p.X.Min, p.X.Max = lo/1.3, hi*1.3
	} else {
		p.X.Min, p.X.Max = lo-0.5, hi+0.5
	}
	p.Y.Tick.Marker = shortTicks{}
	p.Add(plotter.NewGrid())
	for _, ext := range []string{".svg", ".png"} {
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, base+ext); err != nil {
			return err
		}
	}
	return nil
}

// shortTicks are the default ticks with short labels (16M, not 16000000).
type shortTicks struct{}

func (shortTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = fmtVal(ts[i].Value)
		}
	}
	return ts
}
