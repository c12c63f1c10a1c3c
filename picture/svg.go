package picture

import (
	"bytes"
	"context"
	"fmt"

	"github.com/goccy/go-graphviz"

	"github.com/custodian-run/custodian/workflow/engine"
)

// SVG lays g out with Graphviz's dot and returns the picture as SVG, each
// job's node linked to #job-NAME and marked with the id job-node-NAME.
// Graphviz writes every label as XML text, escaped.
func SVG(ctx context.Context, g engine.Graph, opt Options) ([]byte, error) {
	gv, err := graphviz.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("draw %s: start graphviz: %w", g.Run, err)
	}
	defer gv.Close()
	graph, err := graphviz.ParseBytes([]byte(dotText(draw(g, opt), true)))
	if err != nil {
		return nil, fmt.Errorf("draw %s: read the graph: %w", g.Run, err)
	}
	defer graph.Close()
	var b bytes.Buffer
	if err := gv.Render(ctx, graph, graphviz.SVG, &b); err != nil {
		return nil, fmt.Errorf("draw %s: lay out the graph: %w", g.Run, err)
	}
	return b.Bytes(), nil
}
