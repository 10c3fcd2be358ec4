package relay

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/harness/harnesstest"
)

// TestMain lets this test binary be a harness too: the fake harness of
// package harnesstest (for the engine's tests in relay_test.go), or the
// scripted one below.
func TestMain(m *testing.M) {
	harnesstest.Main()
	if path := os.Getenv(envScript); path != "" {
		os.Exit(scripted(path))
	}
	os.Exit(m.Run())
}

// The scripted harness: it plays, for its n-th user line, the n-th turn of
// the script in the file named by envScript, and appends every line it
// reads, and its arguments first, to the file named by envStdin.
const (
	envScript = "FLOWER_RELAY_TEST_SCRIPT"
	envStdin  = "FLOWER_RELAY_TEST_STDIN"
)

// script is what the scripted harness says: one list of steps per user
// line. A step is a line to write, or waitInterrupt: the turn goes on only
// once an interrupt request came (answered as the harness answers it), as
// the real harness ends a turn at the next message boundary, or markWritten
// and a path: the file is made once the lines before are written, as a
// hook the harness runs after them would run. Every control request is
// answered with success; get_context_usage with a breakdown.
type script struct {
	Turns [][]string `json:"turns"`
}

const (
	waitInterrupt = "wait-interrupt"
	markWritten   = "mark-written "
)

func scripted(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 2
	}
	var sc script
	if err := json.Unmarshal(b, &sc); err != nil {
		return 2
	}
	log, err := os.OpenFile(os.Getenv(envStdin), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 2
	}
	defer log.Close()
	args, _ := json.Marshal(map[string]any{"args": os.Args[1:]})
	log.Write(append(args, '\n'))
	out := bufio.NewWriter(os.Stdout)
	emit := func(line string) {
		out.WriteString(line + "\n")
		out.Flush()
	}
	var steps []string
	waiting := false
	play := func() {
		for len(steps) > 0 {
			step := steps[0]
			steps = steps[1:]
			if step == waitInterrupt {
				waiting = true
				return
			}
			if path, ok := strings.CutPrefix(step, markWritten); ok {
				_ = os.WriteFile(path, nil, 0o644)
				continue
			}
			emit(step)
		}
	}
	turn := 0
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		line := in.Text()
		log.WriteString(line + "\n")
		msg := gjson.Parse(line)
		switch msg.Get("type").String() {
		case "control_request":
			resp := `{}`
			sub := msg.Get("request.subtype").String()
			if sub == "get_context_usage" {
				resp = `{"totalTokens":5000,"maxTokens":200000,"isAutoCompactEnabled":false,"categories":[{"id":"system_prompt","tokens":3000},{"id":"messages","tokens":2000}]}`
			}
			emit(`{"type":"control_response","response":{"subtype":"success","request_id":` + msg.Get("request_id").Raw + `,"response":` + resp + `}}`)
			if sub == "interrupt" && waiting {
				waiting = false
				play()
			}
		case "user":
			if turn < len(sc.Turns) {
				steps = append(steps, sc.Turns[turn]...)
			}
			turn++
			if !waiting {
				play()
			}
		}
	}
	return 0
}
