// support/browser.h
#include "support/browser.h"

#include <httplib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace tzero::test {

namespace {

int shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string unescape_text(std::string s) {
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"&lt;", "<"},
                                 {"&gt;", ">"},
                                 {"&nbsp;", " "},
                                 {"&amp;", "&"}})
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  return s;
}

// Measures the page in an iframe (file pages may read each other with
// --allow-file-access-from-files) and writes the result into the wrapper's DOM.
const char* kMeasure = R"(<pre id='result'>pending</pre><script>
function measure(d, w) {
  const r = {};
  try {
    const v = d.getElementById('verdict');
    r.verdict_top = v ? v.getBoundingClientRect().top + w.scrollY : -1;
    r.verdict_class = v ? v.className : '';
    r.verdict_text = v ? v.innerText : '';
    r.overflow_x = d.documentElement.scrollWidth - w.innerWidth;
    let svgs = 0, empty = 0;
    for (const s of d.querySelectorAll('svg')) {
      ++svgs;
      let drawn = 0;
      for (const e of s.querySelectorAll('rect,circle,path,line,polyline,polygon')) {
        const b = e.getBBox();
        if (b.width > 0 || b.height > 0) ++drawn;
      }
      if (!drawn) ++empty;
    }
    r.svgs = svgs;
    r.empty_svgs = empty;
  } catch (e) { r.error = String(e); }
  document.getElementById('result').textContent = JSON.stringify(r);
}
const f = document.getElementById('f');
f.addEventListener('load', () => measure(f.contentDocument, f.contentWindow));
</script>)";

}  // namespace

std::string chromium_path() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (std::filesystem::exists(p)) return p;
  return "";
}

PageCheck check_page(const std::string& file_or_url, int width, int height) {
  static int counter = 0;
  PageCheck c;
  const std::string browser = chromium_path();
  if (browser.empty()) {
    c.error = "chromium absent";
    return c;
  }
  const std::string dir = scratch_dir() + "/page-check-" + std::to_string(counter++);
  std::filesystem::create_directories(dir);
  const std::string url = file_or_url.rfind("http", 0) == 0
                              ? file_or_url
                              : "file://" + std::filesystem::absolute(file_or_url).string();
  // A served page may refuse frames (the console does): its layout is measured on a copy
  // whose <base> points at the server; its DOM and screenshot come from the server itself.
  std::string framed = url;
  if (url.rfind("http", 0) == 0) {
    const size_t host_end = url.find('/', url.find("://") + 3);
    httplib::Client client(url.substr(0, host_end));
    const auto res = client.Get(host_end == std::string::npos ? "/" : url.substr(host_end));
    if (!res || res->status != 200) {
      c.error = "GET " + url + " failed";
      return c;
    }
    std::string html = res->body;
    const size_t head = html.find("<head>");
    if (head != std::string::npos) html.insert(head + 6, "<base href='" + url + "'>");
    write_file(dir + "/page.html", html);
    framed = "file://" + dir + "/page.html";
  }
  write_file(dir + "/check.html",
             "<!doctype html><html><body style='margin:0'><iframe id='f' src='" + framed +
                 "' style='width:" + std::to_string(width) + "px;height:" + std::to_string(height) +
                 "px;border:0'></iframe>" + kMeasure + "</body></html>");
  const std::string flags =
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync "
      "--allow-file-access-from-files --virtual-time-budget=5000 --disable-web-security "
      "--user-data-dir=" +
      dir + "/profile ";
  const int width_px = width + 20, height_px = height + 200;
  if (shell(browser + flags + "--window-size=" + std::to_string(width_px) + "," +
            std::to_string(height_px) + " --dump-dom file://" + dir + "/check.html > " + dir +
            "/wrapper.html 2>/dev/null") != 0) {
    c.error = "chromium --dump-dom failed";
    return c;
  }
  const std::string wrapper = read_file(dir + "/wrapper.html");
  const size_t a = wrapper.find("<pre id=\"result\">");
  const size_t b = wrapper.find("</pre>", a);
  if (a == std::string::npos || b == std::string::npos) {
    c.error = "no measurement in the wrapper's DOM";
    return c;
  }
  const std::string text = unescape_text(wrapper.substr(a + 17, b - a - 17));
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (j.contains("error")) c.error = j["error"];
    c.verdict_top = j.value("verdict_top", -1.0);
    c.verdict_class = j.value("verdict_class", "");
    c.verdict_text = j.value("verdict_text", "");
    c.overflow_x = j.value("overflow_x", 0);
    c.svgs = j.value("svgs", 0);
    c.empty_svgs = j.value("empty_svgs", 0);
  } catch (const std::exception& e) {
    c.error = std::string("measurement not JSON: ") + text;
    return c;
  }
  shell(browser + flags + "--window-size=" + std::to_string(width) + "," + std::to_string(height) +
        " --dump-dom " + url + " > " + dir + "/dom.html 2>/dev/null");
  c.dom = read_file(dir + "/dom.html");
  shell(browser + flags + "--window-size=" + std::to_string(width) + "," + std::to_string(height) +
        " --screenshot=" + dir + "/shot.png " + url + " >/dev/null 2>&1");
  std::error_code ec;
  c.screenshot_bytes = std::filesystem::file_size(dir + "/shot.png", ec);
  if (ec) c.screenshot_bytes = 0;
  return c;
}

}  // namespace tzero::test
