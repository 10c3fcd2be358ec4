package scriptedgen

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// CompressionPrompt is in the system instruction of the CLI's compression
// request (measured on 0.61.0).
const CompressionPrompt = "distilling chat history into a structured XML <state_snapshot>"

// Content is one content of a request, its text parts joined.
type Content struct {
	Role string
	Text string
}

// Response is one functionResponse part of a request.
type Response struct {
	Name     string
	Response string // its response object, as JSON
}

// Request is one recorded generate request.
type Request struct {
	Seq int
	// Time is when the request arrived; Answered, when its answer was
	// written in full (zero while it is being answered, or when the client
	// went away first).
	Time     time.Time
	Answered time.Time
	Header   http.Header // x-goog-api-key is REDACTED
	Body     []byte      // raw JSON

	// Model is the path's model; Stream: streamGenerateContent.
	Model  string
	Stream bool
	// System is the system instruction's text.
	System string
	// Tools are the names of the offered function declarations.
	Tools []string
	// Contents are the request's contents, in order.
	Contents []Content
	// Responses are the functionResponse parts, in order.
	Responses []Response
	// LastUserText is the text of the last content with role "user" that
	// has text.
	LastUserText string
	// Side: the request offers no tools (the CLI asking on the side).
	Side bool
	// Compression: the CLI's own compression (CompressionPrompt).
	Compression bool
}

// apiRequest is the part of a GenerateContentRequest we read.
type apiRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             string `json:"text"`
			Thought          bool   `json:"thought"`
			FunctionResponse *struct {
				Name     string          `json:"name"`
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	SystemInstruction *struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"systemInstruction"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

func parseRequest(body []byte) (Request, error) {
	var a apiRequest
	if err := json.Unmarshal(body, &a); err != nil {
		return Request{}, fmt.Errorf("parse generate request: %w", err)
	}
	r := Request{Body: body}
	if a.SystemInstruction != nil {
		var sys []string
		for _, p := range a.SystemInstruction.Parts {
			sys = append(sys, p.Text)
		}
		r.System = strings.Join(sys, "\n")
	}
	for _, t := range a.Tools {
		for _, f := range t.FunctionDeclarations {
			r.Tools = append(r.Tools, f.Name)
		}
	}
	for _, c := range a.Contents {
		var text []string
		for _, p := range c.Parts {
			switch {
			case p.FunctionResponse != nil:
				r.Responses = append(r.Responses, Response{Name: p.FunctionResponse.Name, Response: string(p.FunctionResponse.Response)})
			case p.Text != "" && !p.Thought:
				text = append(text, p.Text)
			}
		}
		ct := Content{Role: c.Role, Text: strings.Join(text, "\n")}
		r.Contents = append(r.Contents, ct)
		if ct.Role == "user" && ct.Text != "" {
			r.LastUserText = ct.Text
		}
	}
	r.Compression = strings.Contains(r.System, CompressionPrompt) || strings.Contains(r.LastUserText, CompressionPrompt)
	r.Side = len(r.Tools) == 0 && !r.Compression
	return r, nil
}

// ShellOutput is what a command printed, from the functionResponse of the
// CLI's shell tool: its "output", without the wrapper and the lines the
// CLI adds ("Output: " before it; the process group, an exit code or a
// signal after). Measured on 0.61.0: {"output":"<untrusted_context>\n
// Output: one\ntwo\nProcess Group PGID: 15979\n</untrusted_context>"}.
func ShellOutput(response string) string {
	var r struct {
		Output string `json:"output"`
	}
	if json.Unmarshal([]byte(response), &r) != nil {
		return ""
	}
	s := strings.TrimSpace(r.Output)
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(s, "<untrusted_context>"), "</untrusted_context>"))
	s = strings.TrimPrefix(s, "Output:")
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "Process Group PGID:") || strings.HasPrefix(l, "Exit Code:") || strings.HasPrefix(l, "Signal:") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}
