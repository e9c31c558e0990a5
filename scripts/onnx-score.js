// onnx-score.js MODEL FEEDS.json: runs an ONNX model picasso exported with
// onnxruntime-node and prints {"scores": [...]} on stdout. FEEDS.json maps
// each input name to {"type": "float32" or "int64", "dims": [...], "data":
// [...] (flat, row-major)}. NODE_PATH must reach onnxruntime-node
// (scripts/onnx-check.sh sets it).
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const [model, feedsFile] = process.argv.slice(2);
  const spec = JSON.parse(fs.readFileSync(feedsFile, 'utf8'));
  const feeds = {};
  for (const [name, f] of Object.entries(spec)) {
    const data = f.type === 'int64' ? BigInt64Array.from(f.data.map(BigInt)) : Float32Array.from(f.data);
    feeds[name] = new ort.Tensor(f.type, data, f.dims);
  }
  const session = await ort.InferenceSession.create(model);
  const out = await session.run(feeds);
  process.stdout.write(JSON.stringify({ scores: Array.from(out.score.data) }) + '\n');
}

main().catch((e) => { console.error(String(e)); process.exit(1); });
