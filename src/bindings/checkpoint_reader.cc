// A model file opened by the one loader (model/load.h, through bindings/checkpoints.h: the lite
// module reads our own files only) and handed to JS a tensor at a time:
// the WebGPU backend's reader (web/lib/webgpu/webgpu-checkpoint.js). The file stays in the
// caller's JS buffer; each tensor is fetched from it when asked, converted by the loader's own
// conversions (model/family_plan.h: widened or dequantized, finite values checked; 8-bit blocks as
// quants and scales) and returned as a fresh typed array, so that wasm memory holds one tensor at a
// time. Its own EMSCRIPTEN_BINDINGS block: Module.CheckpointReader. Tensor names arrive as JS
// values (not std::string, which Embind mallocs and would leak when the call throws).
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cmath>
#include <string>
#include <utility>

#include "base/buffer.h"
#include "base/errors.h"
#include "bindings/checkpoints.h"
#include "bindings/interop.h"
#include "kernels/matmul_q8.h"
#include "model/family_plan.h"
#include "model/gpt_model.h"

namespace specdec::bindings {
namespace {

using kernels::kQ8Block;

class CheckpointReader {
 public:
  // bytes: a Uint8Array, or any object with length and subarray(begin, end)
  // (web/lib/model/sources.js ChunkedBytes), kept for the reader's life.
  explicit CheckpointReader(val bytes)
      : bytes_(std::move(bytes)),
        read_([this](uint64_t offset, size_t n, uint8_t* into) {
          if (n == 0) return;
          const val part = bytes_.call<val>("subarray", double(offset), double(offset + n));
          if (part["length"].as<double>() != double(n)) {
            fail("bytes: the source gave ", part["length"].as<double>(), " bytes at offset ",
                 offset, " where ", n, " were asked");
          }
          val(emscripten::typed_memory_view(n, into)).call<void>("set", part);
        }),
        checkpoint_(open_model_file(js_size(bytes_, "bytes"), read_)) {
    check_checkpoint(checkpoint_);  // what loading it on the CPU checks, in the same words
  }
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  // { format, family, vocabSize, nLayer, nHead, nKvHead, nEmbd, headDim, nFf, blockSize,
  //   normEps, geluErf, tiedHead, nParams }
  val config() const {
    const FamilyConfig& f = checkpoint_.config;
    val o = val::object();
    o.set("format", std::string(format_name(checkpoint_.format)));
    o.set("family", std::string(family_name(f.family)));
    o.set("vocabSize", f.vocab_size);
    o.set("nLayer", f.n_layer);
    o.set("nHead", f.n_head);
    o.set("nKvHead", f.n_kv_head);
    o.set("nEmbd", f.n_embd);
    o.set("headDim", f.head_dim);
    o.set("nFf", f.n_ff);
    o.set("blockSize", f.context > 0 ? f.context : f.max_positions);
    o.set("normEps", f.norm_eps);
    o.set("geluErf", f.gelu_erf);
    o.set("tiedHead", f.tied_head);
    double params = 0;
    for (const auto& [name, t] : checkpoint_.tensors) {
      double numel = 1;
      for (uint64_t d : t.shape) numel *= static_cast<double>(d);
      params += numel;
    }
    o.set("nParams", params);
    return o;
  }

  // The tensor's type as the formats spell it ("F32" ... "Q8_0"), "" when there is none.
  std::string type(val name) const {
    const CheckpointTensor* t = checkpoint_.find(name.as<std::string>());
    return t ? tensor_type_name(t->type) : "";
  }

  // The tensor as float (widened, blocks dequantized, non-finite values refused).
  val floats(val js_name) {
    return guard([&] {
      const std::string name = js_name.as<std::string>();
      const CheckpointTensor& t = tensor(name);
      Buffer<float> out(family::tensor_numel(t));
      family::to_floats_into(name, t, out.data(), scratch_);
      return float32_array(out.data(), out.size());
    });
  }

  // A Linear weight (n, k) as 8-bit blocks: { q: Int8Array (n k), scales: Float32Array
  // (n k / 32) }: stored blocks as they are, a float weight quantized as the loader does.
  val int8(val js_name) {
    return guard([&] {
      const std::string name = js_name.as<std::string>();
      const CheckpointTensor& t = tensor(name);
      if (t.shape.size() != 2 || t.shape[1] % kQ8Block != 0) {
        fail("model file: tensor '", name, "' is not a matrix of rows in blocks of ", kQ8Block);
      }
      const size_t n = t.shape[0], k = t.shape[1];
      Buffer<int8_t> q(n * k);
      Buffer<float> scales(n * k / kQ8Block);
      if (family::is_quantized(t.type)) {
        family::blocks_to_q8(name, t, q.data(), scales.data(), scratch_);
      } else {
        Buffer<float> w(n * k);
        family::to_floats_into(name, t, w.data(), scratch_);
        kernels::quantize_weights_q8(w.data(), n, k, q.data(), scales.data());
        for (size_t i = 0; i < scales.size(); ++i) {
          if (!(std::isfinite(scales[i]) && scales[i] > 0.0f)) {
            fail("model file: tensor '", name, "' cannot be quantized (block ", i, " scale ",
                 scales[i], ")");
          }
        }
      }
      val o = val::object();
      o.set("q", val::global("Int8Array").new_(emscripten::typed_memory_view(q.size(), q.data())));
      o.set("scales", float32_array(scales.data(), scales.size()));
      return o;
    });
  }

 private:
  const CheckpointTensor& tensor(const std::string& name) const {
    const CheckpointTensor* t = checkpoint_.find(name);
    if (!t) fail("model file: missing tensor '", name, "'");
    return *t;
  }

  val bytes_;
  ByteReader read_;  // over bytes_; the checkpoint's tensors read through it
  Checkpoint checkpoint_;
  Buffer<uint8_t> scratch_;  // a fetched tensor's bytes, kept across tensors
};

CheckpointReader* open_reader(val bytes) {
  return guard([&] { return new CheckpointReader(std::move(bytes)); });
}

val reader_config(const CheckpointReader& r) {
  return guard([&] { return r.config(); });
}

}  // namespace
}  // namespace specdec::bindings

EMSCRIPTEN_BINDINGS(specdec_checkpoint_reader) {
  using namespace emscripten;
  using specdec::bindings::CheckpointReader;
  class_<CheckpointReader>("CheckpointReader")
      .class_function("open", &specdec::bindings::open_reader, allow_raw_pointers())
      .function("config", &specdec::bindings::reader_config)
      .function("type", &CheckpointReader::type)
      .function("floats", &CheckpointReader::floats)
      .function("int8", &CheckpointReader::int8);
}
