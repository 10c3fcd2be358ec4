// Package pagecheck owns what the tests do with a real browser: Debian's
// chromium, headless, driven over the Chrome DevTools Protocol on the pipe
// chromium offers (--remote-debugging-pipe: JSON messages ended by a NUL
// byte on file descriptors 3 and 4), so no port is opened and no client
// library is needed. A page is loaded; every console error, uncaught
// exception, error log entry (a CSP violation, a failed load) and network
// request it causes is recorded; its DOM is queried; a screenshot is
// written.
package pagecheck

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Chromium is the path of the chromium binary (make tools installs it), or
// fails the test; under -short it skips.
func Chromium(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs chromium: make test runs this, make unit does not")
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: run `make tools` (it runs apt-get install chromium)")
	return ""
}

// Browser is one headless chromium with a fresh profile.
type Browser struct {
	t    testing.TB
	cmd  *exec.Cmd
	in   *os.File // chromium's fd 3: what it reads
	out  *os.File // chromium's fd 4: what it writes
	done chan struct{}

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan reply
	pages   map[string]*Page // by session id
	err     error
}

type reply struct {
	Result json.RawMessage
	Err    error
}

type message struct {
	ID        int                       `json:"id,omitempty"`
	Method    string                    `json:"method,omitempty"`
	Params    json.RawMessage           `json:"params,omitempty"`
	Result    json.RawMessage           `json:"result,omitempty"`
	Error     *struct{ Message string } `json:"error,omitempty"`
	SessionID string                    `json:"sessionId,omitempty"`
}

// Start starts chromium for the test; it is stopped when the test ends.
func Start(t testing.TB) *Browser {
	t.Helper()
	path := Chromium(t)
	// fd 3: chromium reads commands; fd 4: it writes answers and events.
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--hide-scrollbars", "--mute-audio", "--no-default-browser-check", "--user-data-dir="+t.TempDir(),
		"--remote-debugging-pipe", "--window-size=1100,1400", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, evW}
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 64 << 10}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	cmdR.Close()
	evW.Close()
	b := &Browser{t: t, cmd: cmd, in: cmdW, out: evR, done: make(chan struct{}), waiting: map[int]chan reply{}, pages: map[string]*Page{}}
	go b.read()
	t.Cleanup(func() {
		b.in.Close()
		select {
		case <-b.done:
		case <-time.After(5 * time.Second):
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b.out.Close()
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", stderr.String())
		}
	})
	return b
}

type limitedWriter struct {
	w interface{ WriteString(string) (int, error) }
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		s := string(p)
		if len(s) > l.n {
			s = s[:l.n]
		}
		l.n -= len(s)
		_, _ = l.w.WriteString(s)
	}
	return len(p), nil
}

// read routes chromium's messages: answers to their callers, events to
// their page.
func (b *Browser) read() {
	defer close(b.done)
	br := bufio.NewReaderSize(b.out, 1<<20)
	for {
		data, err := br.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.err = fmt.Errorf("chromium's pipe: %w", err)
			for id, ch := range b.waiting {
				ch <- reply{Err: b.err}
				delete(b.waiting, id)
			}
			b.mu.Unlock()
			return
		}
		var m message
		if err := json.Unmarshal(data[:len(data)-1], &m); err != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.waiting[m.ID]; ok {
				delete(b.waiting, m.ID)
				r := reply{Result: m.Result}
				if m.Error != nil {
					r.Err = errors.New(m.Error.Message)
				}
				ch <- r
			}
		} else if p := b.pages[m.SessionID]; p != nil {
			p.event(m.Method, m.Params)
		}
		b.mu.Unlock()
	}
}

// call sends one command (in session, when not empty) and waits for its
// answer.
func (b *Browser) call(session, method string, params any, result any) error {
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		return b.err
	}
	b.nextID++
	id := b.nextID
	ch := make(chan reply, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	if params == nil {
		params = struct{}{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	data, err := json.Marshal(message{ID: id, Method: method, Params: p, SessionID: session})
	if err != nil {
		return err
	}
	if _, err := b.in.Write(append(data, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Err != nil {
			return fmt.Errorf("%s: %w", method, r.Err)
		}
		if result != nil {
			return json.Unmarshal(r.Result, result)
		}
		return nil
	case <-time.After(60 * time.Second):
		return fmt.Errorf("%s: no answer in 60s", method)
	}
}

// Page is one tab.
type Page struct {
	t       testing.TB
	b       *Browser
	session string
	url     string

	mu       sync.Mutex
	errors   []string
	requests []string
	loaded   chan struct{}
}

// Open opens url in a new tab and waits for its load event.
func (b *Browser) Open(t testing.TB, url string) *Page {
	t.Helper()
	var target struct{ TargetID string }
	if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		t.Fatal(err)
	}
	var att struct{ SessionID string }
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		t.Fatal(err)
	}
	p := &Page{t: t, b: b, session: att.SessionID, url: url}
	b.mu.Lock()
	b.pages[p.session] = p
	b.mu.Unlock()
	for _, domain := range []string{"Runtime", "Log", "Network", "Page"} {
		if err := b.call(p.session, domain+".enable", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	p.mu.Lock()
	p.loaded = make(chan struct{})
	loaded := p.loaded
	p.mu.Unlock()
	var nav struct{ ErrorText string }
	if err := b.call(p.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		t.Fatal(err)
	}
	if nav.ErrorText != "" {
		t.Fatalf("load %s: %s", url, nav.ErrorText)
	}
	select {
	case <-loaded:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not load within 60s", url)
	}
	return p
}

// event records what the page did; the browser's lock is held.
func (p *Page) event(method string, params json.RawMessage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch method {
	case "Page.loadEventFired":
		if p.loaded != nil {
			close(p.loaded)
			p.loaded = nil
		}
	case "Runtime.consoleAPICalled":
		var e struct {
			Type string
			Args []struct {
				Value       any
				Description string
			}
		}
		if json.Unmarshal(params, &e) == nil && (e.Type == "error" || e.Type == "assert") {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, fmt.Sprint(a.Value)+a.Description)
			}
			p.errors = append(p.errors, "console."+e.Type+": "+strings.Join(parts, " "))
		}
	case "Runtime.exceptionThrown":
		var e struct {
			ExceptionDetails struct {
				Text      string
				Exception struct{ Description string }
			}
		}
		_ = json.Unmarshal(params, &e)
		p.errors = append(p.errors, "exception: "+e.ExceptionDetails.Text+" "+e.ExceptionDetails.Exception.Description)
	case "Log.entryAdded":
		var e struct {
			Entry struct {
				Level, Text, URL string
			}
		}
		if json.Unmarshal(params, &e) == nil && e.Entry.Level == "error" {
			p.errors = append(p.errors, "log: "+e.Entry.Text+" "+e.Entry.URL)
		}
	case "Network.requestWillBeSent":
		var e struct{ Request struct{ URL string } }
		if json.Unmarshal(params, &e) == nil {
			p.requests = append(p.requests, e.Request.URL)
		}
	}
}

// Errors are the console errors, exceptions and error log entries so far.
func (p *Page) Errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errors...)
}

// Requests are the URLs the page requested, the page itself left out.
func (p *Page) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, u := range p.requests {
		if u != p.url {
			out = append(out, u)
		}
	}
	return out
}

// Eval evaluates a JavaScript expression and decodes its value into v.
func (p *Page) Eval(expr string, v any) {
	p.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage
		}
		ExceptionDetails *struct{ Text string }
	}
	if err := p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res); err != nil {
		p.t.Fatal(err)
	}
	if res.ExceptionDetails != nil {
		p.t.Fatalf("evaluate %s: %s", expr, res.ExceptionDetails.Text)
	}
	if err := json.Unmarshal(res.Result.Value, v); err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
}

// Count is how many elements match the CSS selector.
func (p *Page) Count(selector string) int {
	p.t.Helper()
	var n int
	p.Eval(fmt.Sprintf("document.querySelectorAll(%s).length", jsString(selector)), &n)
	return n
}

// Text is the text of the elements matching selector, one per line.
func (p *Page) Text(selector string) string {
	p.t.Helper()
	var s string
	p.Eval(fmt.Sprintf("Array.from(document.querySelectorAll(%s)).map(e => e.textContent).join('\\n')", jsString(selector)), &s)
	return s
}

// WaitCount waits until at least n elements match selector, up to limit,
// and returns the last count.
func (p *Page) WaitCount(selector string, n int, limit time.Duration) int {
	p.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got := p.Count(selector)
		if got >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Screenshot writes a PNG of the page, width pixels wide and at most
// maxHeight high (0: the whole page), to path.
func (p *Page) Screenshot(path string, width, maxHeight int) {
	p.t.Helper()
	if err := p.b.call(p.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": 800,
		"deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		p.t.Fatal(err)
	}
	var h float64
	p.Eval("document.documentElement.scrollHeight", &h)
	height := int(math.Min(math.Ceil(h), 12000))
	if maxHeight > 0 {
		height = min(height, maxHeight)
	}
	if err := p.b.call(p.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height,
		"deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		p.t.Fatal(err)
	}
	var shot struct{ Data string }
	if err := p.b.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		p.t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// EmulateDark makes the page see prefers-color-scheme: dark (or light).
func (p *Page) EmulateDark(dark bool) {
	p.t.Helper()
	v := "light"
	if dark {
		v = "dark"
	}
	if err := p.b.call(p.session, "Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": v}}}, nil); err != nil {
		p.t.Fatal(err)
	}
}

// EmulatePrint makes the page render for print (or for the screen).
func (p *Page) EmulatePrint(print bool) {
	p.t.Helper()
	media := ""
	if print {
		media = "print"
	}
	if err := p.b.call(p.session, "Emulation.setEmulatedMedia", map[string]any{"media": media}, nil); err != nil {
		p.t.Fatal(err)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
