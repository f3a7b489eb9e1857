// Steward's only first-party script. It adds the CSRF token to htmx
// requests, shows a slot's "unavailable, retrying" state when its fragment
// fails and retries it with backoff (or, refused for good, such as not
// found, says why and stops; refused by the host's rate limit,
// says so and retries when Retry-After says), says in a live region when
// the host's rate limit refused the request that fills it, renders
// <time class="local-time"> in the viewer's time zone, gives a card whose
// table does not fit half the page the whole row, and lets a file be
// dropped on a form's .dropzone as well as picked with its file input.
// Pages work without it, minus those.
"use strict";
(function () {
	var csrf = document.querySelector('meta[name="csrf-token"]');
	var timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
	var nbsp = "\u00a0";
	var retries = new WeakMap();

	// localTime is the date and time in the viewer's locale, which may
	// break onto two lines only between the date and the time: every other
	// space is a non-breaking one.
	function localTime(d) {
		var parts = timeFormat.formatToParts(d);
		var firstTime = parts.findIndex(function (p) { return p.type === "hour"; });
		return parts.map(function (p, i) {
			var v = p.value.replace(/\s/g, nbsp);
			return i === firstTime - 1 && p.type === "literal" ? v.replace(/\u00a0$/, " ") : v;
		}).join("");
	}

	function localTimes(root) {
		root.querySelectorAll("time.local-time[datetime]").forEach(function (el) {
			var d = new Date(el.getAttribute("datetime"));
			if (!isNaN(d)) {
				el.title = el.getAttribute("datetime");
				el.textContent = localTime(d);
			}
		});
	}

	// widen lets a card of a grid whose table does not fit it take the
	// whole row, so that a table of many columns is not left scrolling in
	// half the page's width.
	function widen(root) {
		root.querySelectorAll(".table-wrap").forEach(function (wrap) {
			var card = wrap.closest(".grid > .card");
			if (card && wrap.scrollWidth > wrap.clientWidth + 1) {
				card.classList.add("card-wide");
			}
		});
	}

	function slotOf(evt) {
		var body = evt.detail && evt.detail.elt;
		return body && body.classList && body.classList.contains("slot-body") ? body : null;
	}

	// retryAfter is the wait in seconds a 429 answer asks for, 0 for any
	// other failure.
	function retryAfter(xhr) {
		if (!xhr || xhr.status !== 429) {
			return 0;
		}
		var wait = parseInt(xhr.getResponseHeader("Retry-After"), 10);
		return wait > 0 ? wait : 5;
	}

	// refusal is what a slot shows for an answer that asking again would
	// not change — a client error other than a timeout or a rate limit,
	// such as a resource not found or a tenant the caller may not see —
	// from its problem document's detail; "" for any other failure.
	function refusal(xhr) {
		if (!xhr || xhr.status < 400 || xhr.status >= 500 || xhr.status === 408 || xhr.status === 429) {
			return "";
		}
		var what = { 401: "Signed out", 403: "Not allowed", 404: "Not found" }[xhr.status] || "Not shown";
		try {
			var problem = JSON.parse(xhr.responseText);
			if (problem && typeof problem.detail === "string" && problem.detail) {
				return what + ": " + problem.detail.replace(/\.$/, "") + ".";
			}
		} catch (e) {
			// An answer that is no problem document says its status alone.
		}
		return what + " (" + xhr.status + ").";
	}

	// failed shows the slot's failure and retries it: after the wait a
	// rate limit asked for, saying so, or with backoff as "unavailable". A
	// refusal is shown as it is, and not asked again.
	function failed(body, xhr) {
		var slot = body.closest(".slot");
		var status = slot.querySelector(".slot-status");
		var wait = retryAfter(xhr);
		var refused = refusal(xhr);
		slot.classList.add("is-unavailable");
		slot.setAttribute("aria-busy", "false");
		var state = retries.get(body) || { attempts: 0, timer: 0, unavailable: null };
		if (!state.unavailable) {
			state.unavailable = Array.prototype.map.call(status.childNodes, function (n) { return n.cloneNode(true); });
		}
		retries.set(body, state);
		status.hidden = false;
		if (refused) {
			status.replaceChildren(errorState(refused));
			return;
		}
		if (wait) {
			var limited = errorState("Rate limited \u2014 retrying in " + wait + " s");
			limited.classList.add("is-waiting");
			status.replaceChildren(limited);
		} else {
			status.replaceChildren.apply(status, state.unavailable.map(function (n) { return n.cloneNode(true); }));
		}
		if (!state.timer) {
			var delay = wait ? wait * 1000 : Math.min(60, 5 * Math.pow(2, state.attempts)) * 1000;
			state.attempts++;
			state.timer = setTimeout(function () {
				state.timer = 0;
				window.htmx.trigger(body, "retry");
			}, delay);
		}
	}

	// errorState builds what sdk/ui's ErrorState renders, with the message
	// as text.
	function errorState(message) {
		var svgNS = "http://www.w3.org/2000/svg";
		var state = document.createElement("div");
		state.className = "error-state";
		state.setAttribute("role", "status");
		var icon = document.createElementNS(svgNS, "svg");
		icon.setAttribute("class", "error-icon");
		icon.setAttribute("viewBox", "0 0 24 24");
		icon.setAttribute("aria-hidden", "true");
		icon.setAttribute("focusable", "false");
		var path = document.createElementNS(svgNS, "path");
		path.setAttribute("d", "M12 3 2 20h20zM12 10v4M12 17h.01");
		icon.appendChild(path);
		var p = document.createElement("p");
		p.textContent = message;
		state.append(icon, p);
		return state;
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
			failed(body, evt.detail.xhr);
		}
	});
	// htmx swaps no error answer, so a button the host's rate limit refused
	// (429) would seem to do nothing. When the request's target is a live
	// region, the place its outcome is announced (the rule editor's dry-run
	// result), it says so there, with the wait the host's Retry-After gives.
	// Other targets, such as a whole form, are left as they are rather than
	// replaced by the message; slots retry by themselves.
	document.addEventListener("htmx:responseError", function (evt) {
		var xhr = evt.detail.xhr;
		var target = evt.detail.target;
		if (!xhr || xhr.status !== 429 || slotOf(evt) || !target || !target.hasAttribute("aria-live")) {
			return;
		}
		var wait = parseInt(xhr.getResponseHeader("Retry-After"), 10);
		var when = wait > 0 ? "in " + wait + (wait === 1 ? " second." : " seconds.") : "shortly.";
		target.replaceChildren(errorState("Too many requests. Try again " + when));
	});
	["htmx:sendError", "htmx:timeout"].forEach(function (name) {
		document.addEventListener(name, function (evt) {
			var body = slotOf(evt);
			if (body) {
				failed(body, null);
			}
		});
	});
	// A file dropped on a drop zone becomes its file input's, as if
	// picked, so the form sends it as it sends a picked one.
	function dropzoneOf(evt) {
		var zone = evt.target.closest && evt.target.closest(".dropzone");
		return zone && zone.querySelector('input[type="file"]') ? zone : null;
	}
	["dragenter", "dragover"].forEach(function (name) {
		document.addEventListener(name, function (evt) {
			var zone = dropzoneOf(evt);
			if (zone) {
				evt.preventDefault();
				zone.classList.add("is-dragover");
			}
		});
	});
	document.addEventListener("dragleave", function (evt) {
		var zone = dropzoneOf(evt);
		if (zone && !zone.contains(evt.relatedTarget)) {
			zone.classList.remove("is-dragover");
		}
	});
	document.addEventListener("drop", function (evt) {
		var zone = dropzoneOf(evt);
		if (!zone) {
			return;
		}
		evt.preventDefault();
		zone.classList.remove("is-dragover");
		var input = zone.querySelector('input[type="file"]');
		input.files = evt.dataTransfer.files;
		input.dispatchEvent(new Event("change", { bubbles: true }));
	});
	document.addEventListener("htmx:load", function (evt) {
		localTimes(evt.detail.elt);
		widen(evt.detail.elt);
	});
	localTimes(document);
	widen(document);
})();
