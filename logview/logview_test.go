package logview

import (
	"bytes"
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 1, 15, 30, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"10m":                  now.Add(-10 * time.Minute),
		"1h30m":                now.Add(-90 * time.Minute),
		"14:05":                time.Date(2026, 12, 1, 14, 5, 0, 0, time.UTC),
		"14:05:09":             time.Date(2026, 12, 1, 14, 5, 9, 0, time.UTC),
		"2026-11-30 09:00":     time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
		"2026-11-30":           time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		"2026-11-30T09:00:00Z": time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
	} {
		got, err := ParseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestPrinterLine(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"lead fields before the message, the rest in record order",
			[]string{`{"time":"2026-11-30T11:48:30.123+09:00","level":"INFO","msg":"handoff written","step":"main","gen":2,"session":"abc","reason":"threshold","context":155000,"phase":"writing"}`},
			"11:48:30 INFO  main gen 2 writing  handoff written  session=abc reason=threshold context=155000\n"},
		{"values quoted only when needed",
			[]string{`{"level":"WARN","msg":"m","a":"","b":"two words","c":"k=v","d":"交接-干活.md","e":"say \"hi\"","f":null,"g":[1,"x"]}`},
			`WARN   m  a="" b="two words" c="k=v" d=交接-干活.md e="say \"hi\"" f=null g=[1,"x"]` + "\n"},
		{"a message with a newline stays on one line",
			[]string{`{"msg":"first\nsecond","x":"tab\there"}`},
			`"first\nsecond"  x="tab\there"` + "\n"},
		{"groups spread into dotted keys",
			[]string{`{"msg":"m","usage":{"in":1,"cache":{"read":2}},"empty":{}}`},
			"m  usage.in=1 usage.cache.read=2 empty={}\n"},
		{"a key written twice shows both values",
			[]string{`{"msg":"m","gen":1,"gen":2}`},
			"gen 1  m  gen=2\n"},
		{"an unparsable time is kept as a field",
			[]string{`{"time":"yesterday","level":"ERROR","msg":"m"}`},
			"ERROR  m  time=yesterday\n"},
		{"not JSON, and JSON that is not a record, as they are",
			[]string{`plain text`, `[1,2]`, `"s"`, `{"msg":`, ``},
			"plain text\n[1,2]\n\"s\"\n{\"msg\":\n\n"},
		{"session ids short, dollars rounded",
			[]string{`{"msg":"m","session":"0b1c2d3e-aaaa-4bbb-8ccc-000000000001","resume_session_id":"9f8e7d6c-bbbb","cost_usd":0.06917999999999999,"n":0.06917999999999999}`},
			"m  session=0b1c2d3e resume_session_id=9f8e7d6c cost_usd=0.0692 n=0.06917999999999999\n"},
		{"a handoff document folded into a preview line",
			[]string{`{"msg":"handoff document as written","document":"# 交接\n\n## 现在在做\n- port the parser\n\n## 下一步\n- run the tests\n","path":"p"}`},
			"handoff document as written  path=p\n    document: - port the parser … (7 lines, 74 bytes; whole with --json)\n"},
		{"a new day is marked",
			[]string{`{"time":"2026-11-30T23:59:59Z","msg":"a"}`, `{"time":"2026-11-30T23:59:59.5Z","msg":"b"}`, `{"time":"2026-12-01T00:00:01Z","msg":"c"}`},
			"23:59:59  a\n23:59:59  b\n-- 2026-12-01 --\n00:00:01  c\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			p := &Printer{W: &out}
			for _, l := range tt.in {
				if err := p.Line([]byte(l)); err != nil {
					t.Fatal(err)
				}
			}
			if out.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), tt.want)
			}
		})
	}
}
