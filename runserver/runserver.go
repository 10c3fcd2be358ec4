// Package runserver is `flower ui`'s server: an index of a workspace's runs
// (or of every workspace flower ps lists) and each run's page, served on
// loopback, or beyond it with a token only, and refusing a loopback request
// that names another host (DESIGN.md «Run server»).
package runserver

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/runpage"
	"github.com/flowerhq/flower/runview"
	"github.com/flowerhq/flower/workbench"
)

// CheckBind refuses an address beyond loopback without a token
// (DESIGN.md «Run server»).
func CheckBind(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %v", addr, err)
	}
	if isLoopbackHost(host) {
		return nil
	}
	if token == "" {
		return fmt.Errorf("--addr %s is beyond loopback: set a token as well (--token or FLOWER_UI_TOKEN)", addr)
	}
	return nil
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Source finds the runs the server shows: those of its Workspaces, or of
// every workspace in flower ps's registry (PSDir, when set); Lang is the
// pages' labels.
type Source struct {
	Workspaces []string
	PSDir      string
	Lang       runpage.Lang
}

type runRef struct {
	ID, Dir, Workspace string
	M                  *manifest.Manifest
}

// runs lists the run dirs, newest first; a run dir that has no readable
// manifest is left out.
func (s *Source) runs() []runRef {
	workspaces := s.Workspaces
	if s.PSDir != "" {
		entries, _ := registry.List(s.PSDir)
		seen := map[string]bool{}
		workspaces = nil
		for _, e := range entries {
			if e.Workspace != "" && !seen[e.Workspace] {
				seen[e.Workspace] = true
				workspaces = append(workspaces, e.Workspace)
			}
		}
	}
	var out []runRef
	for _, ws := range workspaces {
		runs := workbench.RunsDir(workbench.DirOf(ws))
		des, err := os.ReadDir(runs)
		if err != nil {
			continue
		}
		for _, de := range des {
			// Real directories only: latest is a link to one of them.
			if !de.IsDir() || de.Type()&os.ModeSymlink != 0 {
				continue
			}
			dir := filepath.Join(runs, de.Name())
			m, err := manifest.Load(manifest.Path(dir))
			if err != nil {
				continue
			}
			sum := sha256.Sum256([]byte(dir))
			out = append(out, runRef{ID: hex.EncodeToString(sum[:8]), Dir: dir, Workspace: ws, M: m})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].M.CreatedAt.After(out[j].M.CreatedAt) })
	return out
}

// Handler serves the index and the run pages. self is the address it
// listens on, for the Host check; token, when set, is what every request
// must carry.
func Handler(src *Source, token, self string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		if err := indexTemplate.Execute(&b, indexView{L: labelsFor(src.Lang), Lang: src.Lang, Runs: indexRows(src.runs())}); err != nil {
			http.Error(w, "render index", http.StatusInternalServerError)
			return
		}
		page(w, b.Bytes(), "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'")
	})
	mux.HandleFunc("GET /run/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		for _, ref := range src.runs() {
			if ref.ID != id {
				continue
			}
			run, err := runpage.Load(ref.Dir)
			if err != nil {
				http.Error(w, "the run cannot be read", http.StatusInternalServerError)
				return
			}
			var b bytes.Buffer
			if err := runpage.Render(&b, run, runpage.Options{Lang: src.Lang, Poll: "/run/" + id, Index: "/"}); err != nil {
				http.Error(w, "render page", http.StatusInternalServerError)
				return
			}
			page(w, b.Bytes(), runpage.CSP(b.Bytes()))
			return
		}
		http.NotFound(w, r)
	})
	return guard(mux, token, self)
}

func page(w http.ResponseWriter, body []byte, csp string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	_, _ = w.Write(body)
}

const tokenCookie = "flower_ui_token"

// guard refuses what the server must not answer: a request from beyond
// loopback without the token, one with a wrong token, and (without a
// token) one whose Host is not this loopback server, as a page on another
// site rebinding its name to 127.0.0.1 would send.
func guard(next http.Handler, token, self string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		loopback := err == nil && isLoopbackHost(host)
		if token == "" {
			if !loopback {
				http.Error(w, "flower ui answers loopback only", http.StatusForbidden)
				return
			}
			if !loopbackHostHeader(r.Host, self) {
				http.Error(w, "flower ui answers its own loopback address only", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		given := ""
		if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			given = v
		} else if v := r.URL.Query().Get("token"); v != "" {
			given = v
		} else if c, err := r.Cookie(tokenCookie); err == nil {
			given = c.Value
		}
		if subtle.ConstantTimeCompare([]byte(given), []byte(token)) != 1 {
			http.Error(w, "a token is needed", http.StatusForbidden)
			return
		}
		if r.URL.Query().Get("token") != "" {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHostHeader: the request's Host names a loopback host on this
// server's port.
func loopbackHostHeader(hostHeader, self string) bool {
	host, port, err := net.SplitHostPort(hostHeader)
	if err != nil {
		return false
	}
	_, selfPort, err := net.SplitHostPort(self)
	return err == nil && port == selfPort && isLoopbackHost(host)
}

type indexView struct {
	L    func(string) string
	Lang runpage.Lang
	Runs []indexRow
}

type indexRow struct {
	ID, Name, Workspace, Started, Steps string
	Live                                bool
	Cost                                string
}

func indexRows(refs []runRef) []indexRow {
	var rows []indexRow
	for _, ref := range refs {
		row := indexRow{ID: ref.ID, Name: filepath.Base(ref.Dir), Workspace: ref.Workspace, Started: runview.Clock(ref.M.CreatedAt)}
		var steps []string
		cost := 0.0
		for _, st := range ref.M.Steps {
			steps = append(steps, fmt.Sprintf("%s: %s (%d gen)", st.Name, st.Status, len(st.Generations)))
			cost += st.CostUSD
			row.Live = row.Live || st.Status == manifest.StatusRunning
		}
		row.Steps, row.Cost = strings.Join(steps, " · "), runview.Dollars(cost)
		rows = append(rows, row)
	}
	return rows
}

// labelsFor gives the index the page's labels.
func labelsFor(lang runpage.Lang) func(string) string { return runpage.Label(lang) }

var indexTemplate = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="{{.Lang}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>flower · {{call .L "runs"}}</title>
<style>` + runpage.Style + `</style></head>
<body><main>
<h1>flower · {{call .L "runs"}}</h1>
{{if not .Runs}}<p class="muted">{{call .L "noRuns"}}</p>{{else}}
<table class="runs"><thead><tr><th>{{call .L "run"}}</th><th>{{call .L "workspace"}}</th><th>{{call .L "started"}}</th><th>{{call .L "steps"}}</th><th>{{call .L "cost"}}</th></tr></thead>
<tbody>{{range .Runs}}<tr class="run{{if .Live}} live{{end}}"><td><a class="run-link" href="/run/{{.ID}}">{{.Name}}</a>{{if .Live}} <span class="live">●</span>{{end}}</td><td>{{.Workspace}}</td><td>{{.Started}}</td><td>{{.Steps}}</td><td>{{.Cost}}</td></tr>
{{end}}</tbody></table>{{end}}
</main></body></html>
`))
