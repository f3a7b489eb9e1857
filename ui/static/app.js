// Steward's only first-party script. It adds the CSRF token to htmx
// requests, shows a slot's "unavailable, retrying" state when its fragment
// fails and retries it with backoff, and renders <time class="local-time">
// in the viewer's time zone. Pages work without it, minus those.
"use strict";
(function () {
	var csrf = document.querySelector('meta[name="csrf-token"]');
	var timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
	var retries = new WeakMap();

	function localTimes(root) {
		root.querySelectorAll("time.local-time[datetime]").forEach(function (el) {
			var d = new Date(el.getAttribute("datetime"));
			if (!isNaN(d)) {
				el.title = el.getAttribute("datetime");
				el.textContent = timeFormat.format(d);
			}
		});
	}

	function slotOf(evt) {
		var body = evt.detail && evt.detail.elt;
		return body && body.classList && body.classList.contains("slot-body") ? body : null;
	}

	function failed(body) {
		var slot = body.closest(".slot");
		slot.classList.add("is-unavailable");
		slot.setAttribute("aria-busy", "false");
		slot.querySelector(".slot-status").hidden = false;
		var state = retries.get(body) || { attempts: 0, timer: 0 };
		if (!state.timer) {
			var delay = Math.min(60, 5 * Math.pow(2, state.attempts)) * 1000;
			state.attempts++;
			state.timer = setTimeout(function () {
				state.timer = 0;
				window.htmx.trigger(body, "retry");
			}, delay);
		}
		retries.set(body, state);
	}

	function recovered(body) {
		var slot = body.closest(".slot");
		slot.classList.remove("is-unavailable");
		slot.querySelector(".slot-status").hidden = true;
		var state = retries.get(body);
		if (state) {
			clearTimeout(state.timer);
			retries.delete(body);
		}
	}

	document.addEventListener("htmx:configRequest", function (evt) {
		if (csrf) {
			evt.detail.headers["X-CSRF-Token"] = csrf.content;
		}
	});
	document.addEventListener("htmx:beforeRequest", function (evt) {
		var body = slotOf(evt);
		if (body) {
			body.closest(".slot").setAttribute("aria-busy", "true");
		}
	});
	document.addEventListener("htmx:afterRequest", function (evt) {
		var body = slotOf(evt);
		if (!body) {
			return;
		}
		body.closest(".slot").setAttribute("aria-busy", "false");
		if (evt.detail.successful) {
			recovered(body);
		} else {
			failed(body);
		}
	});
	["htmx:sendError", "htmx:timeout"].forEach(function (name) {
		document.addEventListener(name, function (evt) {
			var body = slotOf(evt);
			if (body) {
				failed(body);
			}
		});
	});
	document.addEventListener("htmx:load", function (evt) {
		localTimes(evt.detail.elt);
	});
	localTimes(document);
})();
