package runpage

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"html"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
)

// Options say how a page is rendered.
type Options struct {
	Lang Lang
	// Now is the time a live step's chart runs to; zero: time.Now.
	Now time.Time
	// Poll, when set, makes the page of a live run update itself: an inline
	// script fetches this same-origin URL every second and swaps in its
	// main element, until the run is over (flower ui). Empty: a static
	// page with no script at all (flower show --html).
	Poll string
	// Index is the link back to the list of runs (flower ui); empty: none.
	Index string
}

// view is what the page template reads.
type view struct {
	L        func(string) string
	Lang     Lang
	Run      *Run
	Steps    []stepView
	Live     bool
	Poll     string
	Index    string
	Nonce    string
	CSP      string
	Style    template.CSS
	Title    string
	Rendered string
}

type stepView struct {
	*Step
	Chart   chart
	Gens    []genView
	Context string
}

type genView struct {
	manifest.Generation
	Written  *Document
	Edit     []DiffLine
	Degraded bool
	Outcome  string
	Ctx      string
}

// Render writes run's page to w.
func Render(w io.Writer, run *Run, o Options) error {
	if o.Lang == "" {
		o.Lang = LangEn
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	v := view{L: o.Lang.label, Lang: o.Lang, Run: run, Poll: o.Poll, Index: o.Index, Style: template.CSS(style),
		Rendered: now.Format("2006-01-02 15:04:05 MST")}
	v.Title = o.Lang.label("title") + " · " + lastElem(run.Dir)
	for _, s := range run.Steps {
		sv := stepView{Step: s, Chart: buildChart(s, o.Lang, now), Context: contextText(s.Result, o.Lang)}
		for _, g := range s.Result.Generations {
			gv := genView{Generation: g, Ctx: "—", Outcome: "—"}
			if d, ok := s.Written[g.N]; ok {
				gv.Written = &d
				if l, ok := s.Launched[g.N]; ok && l.Text != d.Text {
					gv.Edit = Diff(d.Text, l.Text)
				}
			}
			if h := g.Handoff; h != nil {
				gv.Degraded = h.Degraded
				gv.Ctx = policy.FormatUsed(h.Context) + " (" + h.Reason + ")"
				gv.Outcome = h.Outcome
			}
			sv.Gens = append(sv.Gens, gv)
		}
		v.Steps = append(v.Steps, sv)
		v.Live = v.Live || s.Live
	}
	csp := "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
	if o.Poll != "" {
		v.Nonce = nonce()
		csp += "; script-src 'nonce-" + v.Nonce + "'; connect-src 'self'"
	}
	v.CSP = csp
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, v); err != nil {
		return fmt.Errorf("render page: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// CSP is the Content-Security-Policy a server sends with a page rendered
// with Poll set (the page's own meta tag says the same).
func CSP(page []byte) string {
	const key = `http-equiv="Content-Security-Policy" content="`
	i := bytes.Index(page, []byte(key))
	if i < 0 {
		return "default-src 'none'"
	}
	rest := page[i+len(key):]
	if j := bytes.IndexByte(rest, '"'); j >= 0 {
		return html.UnescapeString(string(rest[:j]))
	}
	return "default-src 'none'"
}

func nonce() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func contextText(s *manifest.StepResult, lang Lang) string {
	if s.Window == 0 {
		return policy.FormatUsed(s.Context)
	}
	return policy.FormatUsed(s.Context) + " / " + policy.FormatRound(s.Window) + " " + lang.label("window")
}

func lastElem(dir string) string {
	dir = strings.TrimRight(dir, "/")
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		return dir[i+1:]
	}
	return dir
}

var funcs = template.FuncMap{
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.Format("2006-01-02 15:04:05 MST")
	},
	"clockp": func(t *time.Time) string {
		if t == nil {
			return "—"
		}
		return t.Format("2006-01-02 15:04:05 MST")
	},
	"dollars": func(f float64) string { return fmt.Sprintf("$%.4f", f) },
	"used":    policy.FormatUsed,
	"round":   policy.FormatRound,
	"op": func(b byte) string {
		switch b {
		case '+':
			return "ins"
		case '-':
			return "del"
		}
		return "same"
	},
	"opchar": func(b byte) string { return string(b) },
	"orDash": func(s string) string {
		if s == "" {
			return "—"
		}
		return s
	},
	"add":  func(a, b int) int { return a + b },
	"sub":  func(b, a float64) float64 { return round1(a - b) },
	"add1": func(b, a float64) float64 { return round1(a + b) },
	"div2": func(a float64) float64 { return a / 2 },
}

var pageTemplate = template.Must(template.New("page").Funcs(funcs).Parse(pageHTML))

const pageHTML = `<!DOCTYPE html>
<html lang="{{.Lang}}">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{{.Title}}</title>
<style>{{.Style}}</style>
</head>
<body>
<main data-live="{{.Live}}">
{{if .Index}}<nav><a href="{{.Index}}">← {{call .L "runs"}}</a></nav>{{end}}
<h1>{{call .L "title"}} <span class="muted">{{.Run.Dir}}</span></h1>
{{if .Live}}<p class="live">● {{call .L "live"}}</p>{{end}}
<dl class="facts">
<dt>{{call .L "workspace"}}</dt><dd>{{orDash .Run.Manifest.Workspace}}</dd>
<dt>{{call .L "started"}}</dt><dd>{{clock .Run.Manifest.CreatedAt}}</dd>
<dt>{{call .L "updated"}}</dt><dd>{{clock .Run.Manifest.UpdatedAt}}</dd>
{{if .Run.Skipped}}<dt>{{call .L "skipped"}}</dt><dd>{{.Run.Skipped}}</dd>{{end}}
</dl>
{{range .Steps}}{{$s := .}}
<section class="step" data-step="{{.Result.Name}}">
<h2>{{call $.L "step"}} {{.Result.Name}} <span class="status status-{{.Result.Status}}">{{.Result.Status}}</span></h2>
<dl class="facts">
<dt>{{call $.L "cost"}}</dt><dd>{{dollars .Result.CostUSD}}</dd>
<dt>{{call $.L "turns"}}</dt><dd>{{.Result.NumTurns}}</dd>
<dt>{{call $.L "context"}}</dt><dd>{{.Context}}</dd>
<dt>{{call $.L "attempts"}}</dt><dd>{{.Result.Attempts}}</dd>
{{if .Result.Model}}<dt>{{call $.L "model"}}</dt><dd>{{.Result.Model}}</dd>{{end}}
<dt>{{call $.L "started"}}</dt><dd>{{clock .Result.StartedAt}}</dd>
<dt>{{call $.L "ended"}}</dt><dd>{{clockp .Result.EndedAt}}</dd>
</dl>
<figure>
<figcaption>{{call $.L "chart"}} · {{len .Chart.Points}} {{call $.L "responses"}}</figcaption>
<svg class="chart" viewBox="0 0 {{.Chart.W}} {{.Chart.H}}" role="img" aria-label="{{call $.L "chart"}}" xmlns="http://www.w3.org/2000/svg">
<rect class="plot" x="{{.Chart.PlotX0}}" y="{{.Chart.PlotY0}}" width="{{printf "%.1f" (.Chart.PlotX1 | sub .Chart.PlotX0)}}" height="{{printf "%.1f" (.Chart.PlotY1 | sub .Chart.PlotY0)}}"></rect>
{{range .Chart.YTicks}}<line class="grid" x1="{{$s.Chart.PlotX0}}" x2="{{$s.Chart.PlotX1}}" y1="{{.Pos}}" y2="{{.Pos}}"></line><text class="tick" x="{{$s.Chart.PlotX0 | sub 6.0}}" y="{{.Pos}}" text-anchor="end" dominant-baseline="middle">{{.Label}}</text>
{{end}}{{range .Chart.XTicks}}<text class="tick" x="{{.Pos}}" y="{{$s.Chart.PlotY1 | add1 16.0}}" text-anchor="{{.Anchor}}">{{.Label}}</text>
{{end}}{{range .Chart.Bands}}<rect class="{{.Class}}" x="{{.X}}" y="{{$s.Chart.PlotY0}}" width="{{.W}}" height="{{printf "%.1f" ($s.Chart.PlotY1 | sub $s.Chart.PlotY0)}}"><title>{{.Title}}</title></rect>
{{end}}{{range .Chart.HLines}}<line class="th {{.Class}}" x1="{{$s.Chart.PlotX0}}" x2="{{$s.Chart.PlotX1}}" y1="{{.Y}}" y2="{{.Y}}"></line><text class="thl {{.Class}}" x="{{$s.Chart.PlotX1 | sub 4.0}}" y="{{.Y | sub 4.0}}" text-anchor="end">{{.Label}}</text>
{{end}}{{range .Chart.VLines}}<g class="mark {{.Class}}"><line x1="{{.X}}" x2="{{.X}}" y1="{{$s.Chart.PlotY0}}" y2="{{$s.Chart.PlotY1}}"></line><text x="{{.X | add1 3.0}}" y="{{.LabelY}}">{{.Label}}</text><title>{{.Title}}</title></g>
{{end}}{{range .Chart.Lines}}<polyline class="gen gen-{{.Gen}}" points="{{.Points}}"></polyline>
{{end}}{{range .Chart.Points}}<circle class="{{.Class}}" data-gen="{{.Gen}}" cx="{{.X}}" cy="{{.Y}}" r="3"><title>{{.Title}}</title></circle>
{{end}}{{if .Chart.Empty}}<text class="empty" x="{{printf "%.1f" (div2 .Chart.W)}}" y="{{printf "%.1f" (div2 .Chart.H)}}" text-anchor="middle">{{call $.L "noResponses"}}</text>{{end}}
</svg>
<p class="legend"><span class="key working"></span>{{call $.L "legendWorking"}} <span class="key writing"></span>{{call $.L "writing"}} <span class="key cut"></span>{{call $.L "cut"}} <span class="key handoff"></span>{{call $.L "handoff"}} <span class="key degraded"></span>{{call $.L "degraded"}} <span class="key retry"></span>{{call $.L "retry"}} <span class="key wait"></span>{{call $.L "limit"}}</p>
</figure>
<h3>{{call $.L "task"}}</h3>
<pre class="task">{{.Result.Task}}</pre>
<h3>{{call $.L "errors"}}</h3>
{{if .Result.Errors}}<ul class="errors">{{range .Result.Errors}}<li>{{.}}</li>{{end}}</ul>{{else}}<p class="muted">{{call $.L "none"}}</p>{{end}}
<h3>{{call $.L "gens"}}</h3>
{{if not .Gens}}<p class="muted">{{call $.L "noGens"}}</p>{{else}}
<table class="gens">
<thead><tr><th>{{call $.L "gen"}}</th><th>{{call $.L "session"}}</th><th>{{call $.L "started"}}</th><th>{{call $.L "cost"}}</th><th>{{call $.L "turns"}}</th><th>{{call $.L "ctxAtHandoff"}}</th><th>{{call $.L "outcome"}}</th></tr></thead>
<tbody>{{range .Gens}}<tr class="gen-row{{if .Degraded}} degraded{{end}}"><td>{{.N}}</td><td><code>{{orDash .SessionID}}</code></td><td>{{clock .StartedAt}}</td><td>{{dollars .CostUSD}}</td><td>{{.NumTurns}}</td><td>{{.Ctx}}</td><td>{{if .Degraded}}<span class="badge degraded">{{call $.L "degraded"}}</span> {{end}}{{.Outcome}}</td></tr>
{{end}}</tbody>
</table>
{{range .Gens}}
<section class="generation{{if .Degraded}} degraded{{end}}" data-gen="{{.N}}">
<h4>{{call $.L "gen"}} {{.N}}{{if .Degraded}} <span class="badge degraded">{{call $.L "degraded"}}</span>{{end}}</h4>
<dl class="facts">
<dt>{{call $.L "session"}}</dt><dd><code>{{orDash .SessionID}}</code></dd>
<dt>{{call $.L "cost"}}</dt><dd>{{dollars .CostUSD}}</dd>
<dt>{{call $.L "turns"}}</dt><dd>{{.NumTurns}}</dd>
</dl>
{{with .Handoff}}
<details class="receipt" open><summary>{{call $.L "receipt"}}</summary>
<dl class="facts">
<dt>reason</dt><dd>{{.Reason}}</dd><dt>context</dt><dd>{{used .Context}}</dd><dt>at</dt><dd>{{round .At}}</dd><dt>window</dt><dd>{{round .Window}} {{.WindowSource}}</dd>
<dt>outcome</dt><dd>{{.Outcome}}</dd><dt>degraded</dt><dd>{{.Degraded}}{{if .Why}} · {{call $.L "why"}}: {{.Why}}{{end}}</dd>
<dt>path</dt><dd><code>{{orDash .Path}}</code></dd><dt>sections</dt><dd>{{range $i, $x := .Sections}}{{if $i}}, {{end}}{{$x}}{{end}}</dd>
<dt>writing</dt><dd>{{printf "%.1f" .WritingSeconds}} s · {{dollars .WritingCostUSD}}</dd>
<dt>sha256 written</dt><dd><code>{{orDash .SHA256Written}}</code></dd><dt>sha256 launched</dt><dd><code>{{orDash .SHA256Launched}}</code></dd>
{{if .TaskCarried}}<dt>task carried</dt><dd>{{.TaskCarried}}</dd>{{end}}
</dl>
</details>
{{end}}
{{with .Written}}<h5>{{call $.L "document"}}</h5><pre class="document">{{.Text}}</pre>{{end}}
{{if .Edit}}<h5>{{call $.L "edit"}}</h5><pre class="diff">{{range .Edit}}<span class="{{op .Op}}">{{opchar .Op}} {{.Text}}</span>
{{end}}</pre>{{end}}
</section>
{{end}}{{end}}
</section>
{{end}}
<footer class="muted">{{.Rendered}}</footer>
</main>
{{if .Nonce}}<script nonce="{{.Nonce}}">
(function () {
  var url = {{.Poll}};
  function tick() {
    var main = document.querySelector("main");
    if (!main || main.getAttribute("data-live") !== "true") { return; }
    fetch(url, {cache: "no-store"}).then(function (r) { return r.ok ? r.text() : null; }).then(function (text) {
      if (text) {
        var next = new DOMParser().parseFromString(text, "text/html").querySelector("main");
        if (next) { main.replaceWith(next); }
      }
    }).catch(function () {}).finally(function () { setTimeout(tick, 1000); });
  }
  setTimeout(tick, 1000);
})();
</script>{{end}}
</body>
</html>
`
