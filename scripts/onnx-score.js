// onnx-score.js MODEL INPUTS.json: runs an ONNX model picasso exported
// with onnxruntime-node on the inputs (JSON: n, dense, sparse, as flat
// arrays) and prints {"scores": [...]} on stdout. NODE_PATH must reach
// onnxruntime-node (scripts/onnx-check.sh sets it).
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const [model, inputs] = process.argv.slice(2);
  const x = JSON.parse(fs.readFileSync(inputs, 'utf8'));
  const session = await ort.InferenceSession.create(model);
  const feeds = {
    dense: new ort.Tensor('float32', Float32Array.from(x.dense), [x.n, x.dense.length / x.n]),
  };
  if (x.sparse.length > 0) {
    feeds.sparse = new ort.Tensor('int64', BigInt64Array.from(x.sparse.map(BigInt)), [x.n, x.sparse.length / x.n]);
  }
  const out = await session.run(feeds);
  process.stdout.write(JSON.stringify({ scores: Array.from(out.score.data) }) + '\n');
}

main().catch((e) => { console.error(String(e)); process.exit(1); });
