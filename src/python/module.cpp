// The Python package's extension module, tzero._tzero (python/tzero/__init__.py is the API
// people import). One Model holds a session (runtime/session.h: the model, tokenizer, thread
// pool, kernels) and a batched engine on it (tzero/engine.h), so a batch of prompts runs
// through the engine and each prompt gets the bits it gets alone; logits and traces come from
// generate() (runtime/generate.h) on the same session, which `tzero run` runs.
//
// Compute runs with the GIL released, one call at a time per Model (a lock: the engine and
// generate() share the session's pool). Between engine steps and generated tokens the module
// takes the GIL back to check for signals, so Ctrl+C cancels what is in flight and raises
// KeyboardInterrupt. tzero's errors become Python exceptions with its one-line message:
// tzero::RequestError -> tzero.RequestError (a ValueError, with .param and .kind), other
// tzero::Error -> tzero.Error (a RuntimeError).
#include <fnmatch.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/error.h"
#include "chat/template_choice.h"
#include "grammar/json_schema.h"
#include "hub/hf_hub.h"
#include "runtime/generate.h"
#include "runtime/prompt.h"
#include "runtime/session.h"
#include "runtime/speculative.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/tool_calls.h"
#include "tzero/engine.h"

namespace py = pybind11;

namespace {

using tzero::RequestParams;
using tzero::TokenEvent;

// tzero.Error, tzero.RequestError (set at import; kept for the process's life).
PyObject* g_error = PyExc_RuntimeError;
PyObject* g_request_error = PyExc_ValueError;

// What one request's events add up to.
struct Collected {
  std::vector<TokenEvent> events;  // generated tokens' events (not the final one)
  std::vector<TokenEvent> prompt;  // prompt scores (prompt_logprobs)
  TokenEvent final_event;
  bool finished = false;
  std::string text;
};

py::list top_list(const std::vector<tzero::TokenLogprob>& top) {
  py::list out;
  for (const auto& t : top) out.append(py::make_tuple(t.token, py::bytes(t.text), t.logprob));
  return out;
}

py::dict result_dict(const RequestParams& p, const Collected& c) {
  py::dict d;
  std::vector<int32_t> tokens;
  py::list logprobs, tops;
  for (const TokenEvent& e : c.events) {
    tokens.push_back(e.token);
    logprobs.append(e.logprob);
    tops.append(top_list(e.top));
  }
  py::list prompt_lp;
  for (const TokenEvent& e : c.prompt)
    prompt_lp.append(py::make_tuple(e.token, e.logprob, e.rank, top_list(e.top)));
  const TokenEvent& f = c.final_event;
  d["prompt_tokens"] = p.prompt_tokens;
  d["tokens"] = tokens;
  d["text"] = py::bytes(c.text);
  d["logprobs"] = p.sampling.logprobs ? py::object(logprobs) : py::object(py::none());
  d["top_logprobs"] = p.sampling.logprobs ? py::object(tops) : py::object(py::none());
  d["prompt_logprobs"] = p.prompt_logprobs ? py::object(prompt_lp) : py::object(py::none());
  d["finish_reason"] = tzero::to_string(f.finish_reason);
  d["stop_reason"] = tzero::to_string(f.stop_reason);
  d["logits_digest"] = f.logits_digest;
  d["n_cached"] = f.n_cached;
  d["drafted"] = f.n_drafted;
  d["accepted"] = f.n_accepted;
  if (!f.embedding.empty()) {
    py::array_t<float> v(py::ssize_t(f.embedding.size()));
    std::memcpy(v.mutable_data(), f.embedding.data(), f.embedding.size() * sizeof(float));
    d["embedding"] = v;
  }
  return d;
}

// Converts tzero's exceptions into the package's (call with the GIL held).
[[noreturn]] void rethrow(const std::exception_ptr& ep) {
  try {
    std::rethrow_exception(ep);
  } catch (const tzero::RequestError& e) {
    py::object err = py::reinterpret_borrow<py::object>(g_request_error)(e.what());
    err.attr("param") = e.param;
    err.attr("kind") = tzero::to_string(e.kind);
    PyErr_SetObject(g_request_error, err.ptr());
    throw py::error_already_set();
  } catch (const tzero::server::ApiError& e) {
    py::object err = py::reinterpret_borrow<py::object>(g_request_error)(e.what());
    err.attr("param") = e.param;
    err.attr("kind") = e.code;
    PyErr_SetObject(g_request_error, err.ptr());
    throw py::error_already_set();
  } catch (const tzero::QueueFull& e) {
    PyErr_SetString(g_error, e.what());
    throw py::error_already_set();
  } catch (const py::error_already_set&) {
    throw;
  } catch (const std::exception& e) {
    PyErr_SetString(g_error, e.what());
    throw py::error_already_set();
  }
}

class Model {
 public:
  Model(const std::string& path, int threads, const std::string& mode, const std::string& kernels,
        int ctx, const std::string& kv_type, int batch, int max_seqs, bool use_mmap,
        const std::vector<std::string>& ops, const std::string& speculative,
        const std::string& draft_model, int draft_max, int draft_min) {
    try {
      tzero::ComputeOptions c;
      c.n_threads = threads;
      c.kernels = kernels;
      c.op_overrides = ops;
      const auto m = tzero::parse_mode(mode);
      if (!m)
        throw tzero::Error("mode must be deterministic, fast or portable, not '" + mode + "'");
      c.mode = *m;
      c.n_ctx = ctx;
      c.n_batch = batch;
      c.kv_type = tzero::parse_kv_type_arg(kv_type);
      c.use_mmap = use_mmap;
      py::gil_scoped_release nogil;
      // ORG/REPO:QUANT: from the Hugging Face cache, pulled when missing (hub/hf_hub.h).
      session_ = tzero::Session::open(tzero::hub::model_path_or_pull(path, {}), c);
      tzero::EngineOptions eo;
      eo.max_seqs = max_seqs;
      eo.max_batch_tokens = std::max(batch, 1);
      eo.max_queue = 1 << 20;
      // Speculative decoding (runtime/speculative.h): the engine's, and solo runs' the same way.
      eo.spec_type = !draft_model.empty() && speculative == "none" ? "draft" : speculative;
      eo.draft_model = tzero::hub::model_path_or_pull(draft_model, {});
      eo.draft_max = draft_max;
      eo.draft_min = draft_min;
      engine_ = std::make_unique<tzero::Engine>(session_, eo);
      if (eo.spec_type != "none") {
        speculative_.source =
            eo.spec_type == "draft" ? tzero::DraftSource::model : tzero::DraftSource::ngram;
        speculative_.draft_max = draft_max;
        speculative_.draft_min = draft_min;
        if (speculative_.source == tzero::DraftSource::model) {
          tzero::ComputeOptions dc = c;  // the draft on the CPU, with this model's context
          dc.gpu_layers = 0;
          dc.n_ctx = session_->n_ctx();
          speculative_.draft =
              tzero::Session::open(tzero::hub::model_path_or_pull(draft_model, {}), dc);
        }
      }
    } catch (...) {
      rethrow(std::current_exception());
    }
  }

  // Runs requests through the engine; one result dict per request, in order.
  py::list run(const std::vector<RequestParams>& requests) {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    {
      py::gil_scoped_release nogil;
      lock.lock();
    }
    // Shared with the callbacks: a request cancelled here finishes at a later step.
    std::vector<std::shared_ptr<Collected>> out;
    std::vector<uint64_t> ids;
    try {
      for (size_t i = 0; i < requests.size(); ++i) {
        auto c = std::make_shared<Collected>();
        out.push_back(c);
        ids.push_back(engine_->submit(requests[i], [c](const TokenEvent& e) {
          if (e.finished) {
            c->final_event = e;
            c->finished = true;
          } else if (e.prompt) {
            c->prompt.push_back(e);
          } else {
            c->events.push_back(e);
          }
          c->text += e.text;
        }));
      }
    } catch (...) {
      cancel_all(ids);
      rethrow(std::current_exception());
    }
    step_until(
        [&] {
          for (const auto& c : out)
            if (!c->finished) return false;
          return true;
        },
        ids);
    py::list results;
    for (size_t i = 0; i < requests.size(); ++i) {
      RequestParams p = requests[i];
      if (p.prompt_tokens.empty())
        p.prompt_tokens = engine_->tokenize_prompt(p.prompt, p.parse_special);
      results.append(result_dict(p, *out[i]));
    }
    return results;
  }

  // A streaming request: submit, then next() gives its events as they come.
  struct Stream {
    Model* model;
    uint64_t id = 0;
    std::shared_ptr<Collected> c;
    size_t taken = 0;
    bool closed = false;
  };

  std::shared_ptr<Stream> stream(const RequestParams& request) {
    auto s = std::make_shared<Stream>();
    s->model = this;
    s->c = std::make_shared<Collected>();
    std::shared_ptr<Collected> c = s->c;
    try {
      s->id = engine_->submit(request, [c](const TokenEvent& e) {
        if (e.finished) {
          c->final_event = e;
          c->finished = true;
        } else if (!e.prompt) {
          c->events.push_back(e);
        }
      });
    } catch (...) {
      rethrow(std::current_exception());
    }
    return s;
  }

  // The stream's next events: a list of (token, text bytes, logprob) and, once finished, a
  // final dict; None after that.
  py::object next(Stream& s) {
    if (s.closed) return py::none();
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    {
      py::gil_scoped_release nogil;
      lock.lock();
    }
    step_until([&] { return s.c->finished || s.c->events.size() > s.taken; }, {s.id});
    py::list evs;
    for (; s.taken < s.c->events.size(); ++s.taken) {
      const TokenEvent& e = s.c->events[s.taken];
      evs.append(py::make_tuple(e.token, py::bytes(e.text), e.logprob));
    }
    py::dict d;
    d["events"] = evs;
    if (s.c->finished) {
      s.closed = true;
      const TokenEvent& f = s.c->final_event;
      d["text"] = py::bytes(f.text);
      d["finish_reason"] = tzero::to_string(f.finish_reason);
      d["stop_reason"] = tzero::to_string(f.stop_reason);
      d["logits_digest"] = f.logits_digest;
    }
    return d;
  }

  // Cancels the stream's request (thread-safe; it finishes at the next step of any call).
  void close(Stream& s) {
    if (s.closed) return;
    s.closed = true;
    engine_->cancel(s.id);
  }

  // `tzero run`'s path (runtime/generate.h) on this session: logits rows (as --logits-out
  // writes them) and, with trace_globs, the named intermediates per position.
  py::dict generate_solo(const std::vector<int32_t>& prompt, int max_tokens,
                         const tzero::SamplingParams& sampling,
                         const std::vector<std::string>& stop,
                         const std::vector<int32_t>& stop_tokens, bool ignore_eos,
                         const std::string& grammar, bool keep_logits,
                         const std::vector<std::string>& trace_globs) {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    {
      py::gil_scoped_release nogil;
      lock.lock();
    }
    tzero::GenerateOptions g;
    g.prompt_tokens = prompt;
    g.n_predict = max_tokens;
    g.sampling = sampling;
    g.stop = stop;
    g.stop_tokens = stop_tokens;
    g.ignore_eos = ignore_eos;
    g.grammar = grammar;
    g.keep_logits = keep_logits;
    if (trace_globs.empty()) g.speculative = speculative_;  // a trace follows one-token passes
    struct Traced {
      std::vector<float> data;
      size_t row_len = 0, rows = 0;
    };
    std::map<std::string, Traced> traced;
    if (!trace_globs.empty())
      g.trace_hook = [&](std::string_view name, int layer, const float* data, size_t n_tokens,
                         size_t row_len, int) {
        const std::string full = layer < 0
                                     ? std::string(name)
                                     : "blk." + std::to_string(layer) + "." + std::string(name);
        bool wanted = false;
        for (const std::string& p : trace_globs) wanted = wanted || glob_match(p, full);
        if (!wanted) return;
        Traced& t = traced[full];
        t.row_len = row_len;
        t.rows += n_tokens;
        t.data.insert(t.data.end(), data, data + n_tokens * row_len);
      };
    bool interrupted = false;
    g.interrupted = [&] {
      py::gil_scoped_acquire gil;
      interrupted = interrupted || PyErr_CheckSignals() != 0;
      return interrupted;
    };
    tzero::GenerateResult r;
    std::exception_ptr failure;
    {
      py::gil_scoped_release nogil;
      try {
        r = tzero::generate(*session_, g);
      } catch (...) {
        failure = std::current_exception();
      }
    }
    if (interrupted) throw py::error_already_set();
    if (failure) rethrow(failure);
    py::dict d;
    d["prompt_tokens"] = r.prompt_tokens;
    d["tokens"] = r.tokens;
    d["text"] = py::bytes(r.text);
    d["stop_reason"] = tzero::to_string(r.stop_reason);
    d["finish_reason"] = tzero::to_string(tzero::finish_reason_of(r.stop_reason));
    d["logits_digest"] = r.logits_digest;
    d["drafted"] = r.speculative.drafted;
    d["accepted"] = r.speculative.accepted;
    if (keep_logits) {
      const size_t n_vocab = size_t(session_->hparams().n_vocab);
      py::array_t<float> a({py::ssize_t(r.logits.size()), py::ssize_t(n_vocab)});
      for (size_t i = 0; i < r.logits.size(); ++i)
        std::memcpy(a.mutable_data(py::ssize_t(i), 0), r.logits[i].data(), n_vocab * sizeof(float));
      d["logits"] = a;
    }
    py::dict tr;
    for (const auto& [name, t] : traced) {
      py::array_t<float> a({py::ssize_t(t.rows), py::ssize_t(t.row_len)});
      std::memcpy(a.mutable_data(), t.data.data(), t.data.size() * sizeof(float));
      tr[py::str(name)] = a;
    }
    d["trace"] = tr;
    return d;
  }

  std::vector<int32_t> tokenize(const std::string& text, bool add_bos, bool special) const {
    return add_bos ? engine_->tokenize_prompt(text, special)
                   : engine_->tokenize(text, false, special);
  }
  py::bytes detokenize(const std::vector<int32_t>& ids, bool special) const {
    for (int32_t t : ids)
      if (t < 0 || t >= engine_->info().n_vocab) {
        tzero::RequestError e(tzero::RequestErrorKind::invalid_token, "tokens",
                              "token id " + std::to_string(t) + " is outside the vocabulary of " +
                                  std::to_string(engine_->info().n_vocab));
        rethrow(std::make_exception_ptr(e));
      }
    return py::bytes(engine_->detokenize(ids, special));
  }
  std::string chat_prompt(const std::vector<std::pair<std::string, std::string>>& messages,
                          const std::string& template_name) const {
    std::vector<tzero::ChatTurn> turns;
    for (const auto& [role, content] : messages) turns.push_back({role, content});
    try {
      return engine_->apply_chat_template(turns, template_name);
    } catch (...) {
      rethrow(std::current_exception());
    }
  }
  // A chat request body ({"messages", "tools", "tool_choice", "response_format",
  // "max_tokens"}) through tzero serve's own path (server/openai_request.h): the messages
  // parsed, the chat template or the tool prompt rendered, the grammar of a response format or
  // of tool calls. Returns the engine request and the tool-call format ("" without tools).
  py::tuple chat_request(const std::string& body, const std::string& template_name) const {
    try {
      tzero::server::OpenAiRequest r =
          tzero::server::parse_request(tzero::server::Endpoint::chat, body);
      tzero::server::resolve_prompt(r, *engine_, template_name);
      std::string format;
      if (r.tools && r.tools->choice != tzero::server::ToolChoice::none)
        format = r.tools->format == tzero::server::ToolFormat::llama3 ? "llama3" : "hermes";
      return py::make_tuple(r.params, format);
    } catch (...) {
      rethrow(std::current_exception());
    }
  }
  // A reply split into content and tool calls [(id, name, arguments JSON)], as tzero serve
  // splits it.
  static py::tuple split_tool_calls(const std::string& format, const std::string& text) {
    tzero::server::ToolCallParser parser(
        format == "llama3" ? tzero::server::ToolFormat::llama3 : tzero::server::ToolFormat::hermes,
        "call_0_");
    std::string content = parser.push(text);
    content += parser.finish();
    py::list calls;
    for (const auto& c : parser.take()) calls.append(py::make_tuple(c.id, c.name, c.arguments));
    return py::make_tuple(content, calls);
  }
  std::vector<int32_t> tokenize_chat(const std::string& rendered) const {
    return engine_->tokenize_chat(rendered);
  }
  py::dict info() const {
    const tzero::ModelInfo& m = engine_->info();
    py::dict d;
    d["name"] = m.name;
    d["path"] = m.path;
    d["n_ctx"] = m.n_ctx;
    d["n_vocab"] = m.n_vocab;
    d["n_embd"] = m.n_embd;
    d["bos"] = m.bos;
    d["eos"] = m.eos;
    d["eot"] = m.eot;
    d["chat_template"] = m.chat_template;
    d["fingerprint"] = m.fingerprint;  // the engine's, computed once
    d["kernels"] = session_->kernels_label();
    d["description"] = session_->describe();
    return d;
  }

 private:
  static bool glob_match(const std::string& pattern, const std::string& name) {
    return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
  }

  // The requests finish (cancelled) at the next step, whoever takes it; their callbacks hold
  // what they write to.
  void cancel_all(const std::vector<uint64_t>& ids) {
    for (uint64_t id : ids) engine_->cancel(id);
  }

  // Steps the engine (GIL released) until done(); Ctrl+C cancels `ids` and raises.
  template <class Done>
  void step_until(Done done, const std::vector<uint64_t>& ids) {
    while (!done()) {
      std::exception_ptr failure;
      bool stepped = false;
      {
        py::gil_scoped_release nogil;
        try {
          stepped = engine_->step();
        } catch (...) {
          failure = std::current_exception();
        }
      }
      if (failure) {
        cancel_all(ids);
        rethrow(failure);
      }
      if (PyErr_CheckSignals() != 0) {
        py::error_already_set interrupt;
        cancel_all(ids);
        throw interrupt;
      }
      if (!stepped && !done()) {
        cancel_all(ids);
        PyErr_SetString(g_error, "the engine stopped with requests unfinished");
        throw py::error_already_set();
      }
    }
  }

  std::shared_ptr<tzero::Session> session_;
  std::unique_ptr<tzero::Engine> engine_;
  tzero::SpeculativeOptions speculative_;  // generate_solo's drafts (none by default)
  std::mutex mu_;
};

}  // namespace

PYBIND11_MODULE(_tzero, m) {
  m.doc() = "tzero's extension module; import tzero instead (python/tzero/__init__.py)";
  m.attr("__version__") = TZ_VERSION;
  py::class_<tzero::SamplingParams>(m, "SamplingParams")
      .def(py::init<>())
      .def_readwrite("temperature", &tzero::SamplingParams::temperature)
      .def_readwrite("seed", &tzero::SamplingParams::seed)
      .def_readwrite("top_k", &tzero::SamplingParams::top_k)
      .def_readwrite("top_p", &tzero::SamplingParams::top_p)
      .def_readwrite("min_p", &tzero::SamplingParams::min_p)
      .def_readwrite("repetition_penalty", &tzero::SamplingParams::repetition_penalty)
      .def_readwrite("presence_penalty", &tzero::SamplingParams::presence_penalty)
      .def_readwrite("frequency_penalty", &tzero::SamplingParams::frequency_penalty)
      .def_readwrite("logprobs", &tzero::SamplingParams::logprobs)
      .def_readwrite("top_logprobs", &tzero::SamplingParams::top_logprobs);
  py::class_<RequestParams>(m, "RequestParams")
      .def(py::init<>())
      .def_readwrite("prompt_tokens", &RequestParams::prompt_tokens)
      .def_readwrite("prompt", &RequestParams::prompt)
      .def_readwrite("parse_special", &RequestParams::parse_special)
      .def_readwrite("max_tokens", &RequestParams::max_tokens)
      .def_readwrite("stop", &RequestParams::stop)
      .def_readwrite("stop_tokens", &RequestParams::stop_tokens)
      .def_readwrite("ignore_eos", &RequestParams::ignore_eos)
      .def_readwrite("sampling", &RequestParams::sampling)
      .def_readwrite("grammar", &RequestParams::grammar)
      .def_readwrite("prompt_logprobs", &RequestParams::prompt_logprobs)
      .def_readwrite("prompt_top_logprobs", &RequestParams::prompt_top_logprobs)
      .def_property(
          "embedding", [](const RequestParams& r) { return r.embedding != tzero::Pooling::none; },
          [](RequestParams& r, bool on) {
            r.embedding = on ? tzero::Pooling::model : tzero::Pooling::none;
          })
      .def_readwrite("embedding_dims", &RequestParams::embedding_dims);
  py::class_<Model::Stream, std::shared_ptr<Model::Stream>>(m, "Stream")
      .def("next", [](Model::Stream& s) { return s.model->next(s); })
      .def("close", [](Model::Stream& s) { s.model->close(s); });
  py::class_<Model>(m, "Model")
      .def(py::init<const std::string&, int, const std::string&, const std::string&, int,
                    const std::string&, int, int, bool, const std::vector<std::string>&,
                    const std::string&, const std::string&, int, int>(),
           py::arg("path"), py::arg("threads"), py::arg("mode"), py::arg("kernels"), py::arg("ctx"),
           py::arg("kv_type"), py::arg("batch"), py::arg("max_seqs"), py::arg("use_mmap"),
           py::arg("ops"), py::arg("speculative"), py::arg("draft_model"), py::arg("draft_max"),
           py::arg("draft_min"))
      .def("run", &Model::run)
      .def("stream", &Model::stream, py::keep_alive<0, 1>())
      .def("generate_solo", &Model::generate_solo)
      .def("tokenize", &Model::tokenize)
      .def("detokenize", &Model::detokenize)
      .def("chat_prompt", &Model::chat_prompt)
      .def("tokenize_chat", &Model::tokenize_chat)
      .def("chat_request", &Model::chat_request)
      .def_static("split_tool_calls", &Model::split_tool_calls)
      .def("info", &Model::info);
  m.def("json_schema_to_gbnf", [](const std::string& schema) {
    try {
      return tzero::json_schema_to_gbnf(schema);
    } catch (const std::exception& e) {
      tzero::RequestError err(tzero::RequestErrorKind::invalid_grammar, "json_schema", e.what());
      rethrow(std::make_exception_ptr(err));
    }
  });
  m.def("_set_errors", [](py::handle error, py::handle request_error) {
    g_error = error.inc_ref().ptr();
    g_request_error = request_error.inc_ref().ptr();
  });
}
